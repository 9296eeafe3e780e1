"""roofline: where LLM decoding stops waiting on memory and starts waiting on arithmetic.

The package is layered; lower modules never import higher ones:

- facts and arithmetic: :mod:`roofline.hardware`, :mod:`roofline.arithmetic`, :mod:`roofline.errors`
- the machine: :mod:`roofline.system`
- data, kernels and timing: :mod:`roofline.data`, :mod:`roofline.kernels`, :mod:`roofline.timing`
- the suite's parameters: :mod:`roofline.params`
- reports and the command line on top.
"""

__version__ = "0.1.0"
