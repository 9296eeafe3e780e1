"""roofline: where LLM decoding stops waiting on memory and starts waiting on arithmetic.

The package is layered; lower modules never import higher ones:

- facts and arithmetic: :mod:`~roofline.errors`, :mod:`~roofline.hardware`, :mod:`~roofline.arithmetic`,
  :mod:`~roofline.catalogue`, :mod:`~roofline.models`, :mod:`~roofline.units`
- the machine: :mod:`~roofline.system`, :mod:`~roofline.params`, :mod:`~roofline.backends`
- data, kernels and timing: :mod:`~roofline.data`, :mod:`~roofline.kernels`, :mod:`~roofline.torch_kernels`,
  :mod:`~roofline.timing`, :mod:`~roofline.gpu`
- measurement: :mod:`~roofline.measure`, :mod:`~roofline.ceilings`, :mod:`~roofline.gpu_ceilings`,
  :mod:`~roofline.crossover`, :mod:`~roofline.regimes`, :mod:`~roofline.guards`, :mod:`~roofline.suite`,
  :mod:`~roofline.suite_backends`, :mod:`~roofline.decode_model`
- results and reports: :mod:`~roofline.results`, :mod:`~roofline.report`, :mod:`~roofline.results_report`,
  :mod:`~roofline.compare`, :mod:`~roofline.specs`, :mod:`~roofline.plot`, :mod:`~roofline.compare_plot`,
  :mod:`~roofline.decode_report`, :mod:`~roofline.gpu_run`, :mod:`~roofline.machine`, :mod:`~roofline.merge`,
  :mod:`~roofline.fleet`
- the command line: :mod:`~roofline.preflight`, :mod:`~roofline.bench`, :mod:`~roofline.cli`
"""

__version__ = "0.1.0"
