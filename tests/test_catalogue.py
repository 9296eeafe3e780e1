"""The hardware catalogue: contents, sources, validation on load, lookup, host matching, `roofline specs`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.model import catalogue
from roofline.model.hardware import H100

REQUIRED = [
    "H100 SXM",
    "H100 PCIe",
    "H200",
    "A100 SXM 80GB",
    "B200",
    "L4",
    "L40S",
    "RTX 4090",
    "MI300X",
    "MI325X",
    "TPU v5e",
    "TPU v5p",
    "TPU v6e",
]


def test_catalogue_has_the_devices_the_issue_asks_for():
    names = catalogue.names()
    assert len(names) >= 15
    assert set(REQUIRED) <= set(names)
    kinds = [hw.extra["kind"] for hw in catalogue.devices()]
    assert sum(hw.extra["vendor"] == "Apple" for hw in catalogue.devices()) >= 2
    assert "cpu" in kinds


def test_every_figure_has_a_unit_a_positive_value_and_a_source():
    for hw in catalogue.devices():
        figures = hw.extra["figures"]
        assert {"bandwidth", "memory"} <= set(figures)
        assert set(hw.peak_flops) <= set(figures)
        for name, fig in figures.items():
            assert fig["value"] > 0, (hw.name, name)
            assert fig["unit"] in fig["text"], (hw.name, name)
            assert len(fig["source"]) > 20, (hw.name, name)  # a document title or URL, not a stub


def test_peaks_are_dense_and_ordered():
    for hw in catalogue.devices():
        chain = [hw.peak_flops[d] for d in ("tf32", "bf16", "fp8") if d in hw.peak_flops]
        assert chain == sorted(chain), hw.name
    # NVIDIA prints Tensor figures with sparsity: each one halved says so. (The L40S sheet prints its
    # dense figure beside the sparse one, and that is used as printed: see the next test.)
    for name in ("H100 SXM", "H200", "L4", "B200"):
        notes = catalogue.lookup(name).extra["figures"]["bf16"]["note"]
        assert "sparsity" in notes and "halved" in notes, name


def test_corrections_against_the_vendor_sheets():
    l40s = catalogue.lookup("L40S")
    # The sheet prints 362.05 | 733*: the dense figure as printed, not 733 / 2 = 366.5.
    assert l40s.peak("bf16") == l40s.peak("fp16") == 362.05e12
    assert "dense as printed" in l40s.extra["figures"]["bf16"]["note"]
    b200 = catalogue.lookup("B200")
    # NVIDIA's HGX per-GPU figure, not the DGX total / 8; tf32: the per-GPU sparse 2.2 P halved.
    assert b200.bandwidth == 7.7e12 and b200.peak("tf32") == 1.1e15
    assert "HGX" in b200.extra["figures"]["bandwidth"]["note"]
    # TPUs: Google prints GB.
    assert catalogue.lookup("TPU v5e").memory_bytes == 16e9
    assert catalogue.lookup("TPU v6e").memory_bytes == 32e9


def test_capacities_are_binary_less_what_the_driver_reserves():
    h100 = catalogue.lookup("h100")
    assert h100.memory_bytes == 80 * 2**30
    assert h100.usable_memory == 81_559 * 2**20  # what nvidia-smi shows
    assert "github.com/modal-labs/modal-client/pull/2797" in h100.extra["figures"]["reserved"]["source"]
    assert catalogue.lookup("a100").usable_memory == 81_920 * 2**20
    assert catalogue.lookup("L40S").usable_memory == 46_068 * 2**20
    assert catalogue.lookup("L4").usable_memory == 23_034 * 2**20
    assert catalogue.lookup("MI300X").usable_memory == 201_310_208 * 2**10  # rocminfo's pool, KiB
    for hw in catalogue.devices():
        assert 0 <= hw.memory_reserved < 0.1 * hw.memory_bytes, hw.name


def test_the_lab_h100_stays_the_default():
    hw = catalogue.lookup("h100")
    assert hw.name == H100.name
    assert hw.peak("bf16") == H100.peak("bf16") == 990e12
    assert hw.bandwidth == H100.bandwidth == 3.35e12
    assert "989.5" in hw.extra["figures"]["bf16"]["note"]


@pytest.mark.parametrize(
    ("alias", "name"),
    [
        ("h100", "H100 SXM"),
        ("H100-SXM5", "H100 SXM"),
        ("nvidia h100 sxm", "H100 SXM"),
        ("MI300X", "MI300X"),
        ("amd instinct mi300x", "MI300X"),
        ("tpu-v5e", "TPU v5e"),
        ("Trillium", "TPU v6e"),
        ("a100", "A100 SXM 80GB"),
    ],
)
def test_lookup_by_name_or_alias(alias, name):
    assert catalogue.lookup(alias).name == name


def test_unknown_name_names_the_closest_matches():
    with pytest.raises(BadInput, match=r"unknown device 'H1000' \(closest: H100 SXM"):
        catalogue.lookup("H1000")
    with pytest.raises(BadInput, match="known: H100 SXM"):
        catalogue.lookup("qqqqqq")


@pytest.mark.parametrize(
    ("facts", "name"),
    [
        ({"gpu": "NVIDIA H100 80GB HBM3"}, "H100 SXM"),
        ({"gpu": "NVIDIA H100 PCIe"}, "H100 PCIe"),
        ({"gpu": "NVIDIA H200"}, "H200"),
        ({"gpu": "NVIDIA GH200 480GB"}, None),
        ({"gpu": "NVIDIA L4"}, "L4"),
        ({"gpu": "NVIDIA A100-SXM4-80GB"}, "A100 SXM 80GB"),
        ({"gpu": "AMD Instinct MI300X"}, "MI300X"),
        ({"cpu": "AMD EPYC 9654 96-Core Processor", "gpu": "none"}, "EPYC 9654"),
        ({"cpu": "Apple M2 Max"}, "M2 Max"),
        ({"cpu": "Intel(R) Xeon(R) Processor"}, None),
        ({"cpu": "AMD EPYC 9654 96-Core", "gpu": "NVIDIA L40S"}, "L40S"),
    ],
)
def test_match_host(facts, name):
    hw = catalogue.match_host(facts)
    assert (hw.name if hw else None) == name


GOOD = """
[[device]]
name = "Toy"
vendor = "Nobody"
kind = "gpu"
aliases = ["toy-1"]
[device.documents]
sheet = "Toy datasheet, https://example.invalid/toy"
[device.figures]
bandwidth = { value = "1 TB/s", source = "sheet" }
memory = { value = "16 GiB", source = "sheet" }
tf32 = { value = "50 TFLOP/s", source = "sheet" }
bf16 = { value = "100 TFLOP/s", source = "sheet", note = "printed 200 with sparsity; halved" }
int8 = { value = "200 TOP/s", source = "sheet" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cat.toml"
    path.write_text(text)
    return path


def test_a_valid_file_loads_with_units_converted(tmp_path):
    hw = catalogue.load(write(tmp_path, GOOD))["Toy"]
    assert hw.bandwidth == 1e12 and hw.memory_bytes == 16 * 2**30
    assert hw.peak_flops == {"tf32": 50e12, "bf16": 100e12, "int8": 200e12}
    assert hw.extra["figures"]["bf16"]["source"].startswith("Toy datasheet")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"1 TB/s"', '"1 TFLOP/s"', "is in FLOP/s, expected B/s"),
        ('"100 TFLOP/s"', '"-100 TFLOP/s"', "cannot read"),
        ('"100 TFLOP/s"', '"0 TFLOP/s"', "must be positive"),
        ('"100 TFLOP/s"', "100e12", "write the figure as a string with its unit"),
        ('"100 TFLOP/s"', '"40 TFLOP/s"', "tf32 peak 50 TFLOP/s exceeds bf16 peak 40 TFLOP/s"),
        ('"200 TOP/s"', '"200 TFLOP/s"', "expected OP/s"),
        ('"50 TFLOP/s", source = "sheet"', '"50 TFLOP/s", source = "blog"', "source 'blog' is not one of"),
        ('bf16 = { value = "100 TFLOP/s", source = "sheet", ', 'bf16 = { value = "100 TFLOP/s", ', "write {"),
        ('bandwidth = { value = "1 TB/s", source = "sheet" }', "", "missing the bandwidth figure"),
        ('name = "Toy"', 'name = "Toy"\nspeed = 3', "unknown key(s) speed"),
        ("[device.figures]", "[device.figures", "not valid TOML"),
        (
            'memory = { value = "16 GiB", source = "sheet" }',
            'memory = { value = "16 GiB", source = "sheet" }\nreserved = { value = "16 GiB", source = "sheet" }',
            "is not below the capacity",
        ),
        (
            'memory = { value = "16 GiB", source = "sheet" }',
            'memory = { value = "16 GiB", source = "sheet" }\nreserved = { value = "1 GB/s", source = "sheet" }',
            "is in B/s, expected B",
        ),
    ],
)
def test_invalid_catalogues_are_refused_in_one_line(tmp_path, old, new, message):
    assert old in GOOD
    with pytest.raises(BadInput) as err:
        catalogue.load(write(tmp_path, GOOD.replace(old, new, 1)))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_two_devices_may_not_share_an_alias(tmp_path):
    twin = GOOD.replace('name = "Toy"', 'name = "Toy 2"').replace('"toy-1"', '"TOY 1"')
    with pytest.raises(BadInput, match="both answer to 'toy1'"):
        catalogue.load(write(tmp_path, GOOD + twin))


# ---- roofline specs ---------------------------------------------------------------------------


def test_specs_table_rows_for_h100_h200_mi300x(capsys):
    assert main(["specs", "h100", "H200", "mi300x", "--dtype", "bf16"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["device", "arithmetic", "peak", "bandwidth", "weights", "crossover", "batch"]
    # 2 B/param is the ridge itself; 1 B/param halves it; 0.5 B/param quarters it
    assert re.search(r"^H100 SXM\s+bf16\s+990 TFLOP/s\s+3.35 TB/s\s+bf16, 2 B\s+296$", lines[2])
    assert re.search(r"^\s+fp8, 1 B \(weight-only\)\s+148$", lines[3])
    assert re.search(r"^\s+int4, 0.5 B \(weight-only\)\s+73.9$", lines[4])
    assert re.search(r"^H200\s+bf16\s+990 TFLOP/s\s+4.8 TB/s\s+bf16, 2 B\s+206$", lines[5])
    assert re.search(r"^MI300X\s+bf16\s+1.307 PFLOP/s\s+5.3 TB/s\s+bf16, 2 B\s+247$", lines[8])
    assert "ridge" not in "\n".join(lines)  # the ridge is the 2 B/param column: not printed twice


def test_specs_crosses_each_arithmetic_only_with_the_weights_it_reads(capsys):
    assert main(["specs", "h100", "--json"]) == 0
    (dev,) = json.loads(capsys.readouterr().out)["devices"]
    weights = {dtype: list(d["crossover_batch"]) for dtype, d in dev["dtypes"].items()}
    assert weights == {
        "fp64": ["fp64"],
        "fp32": ["fp32"],
        "tf32": ["fp32"],
        "bf16": ["bf16", "fp8", "int4"],
        "fp16": ["fp16", "int4"],
        "fp8": ["fp8"],
        "int8": ["int8"],
    }


def test_one_printed_figure_is_one_dense_figure_everywhere():
    """1,979 TFLOP/s with sparsity (H100 and H200, bf16 and fp16) is 990 dense in every entry."""
    for name in ("h100", "h200"):
        hw = catalogue.lookup(name)
        assert hw.peak("bf16") == hw.peak("fp16") == 990e12, name


def test_specs_json_has_every_dtype_with_crossovers_and_sources(capsys):
    assert main(["specs", "H100-SXM5", "--json"]) == 0
    (dev,) = json.loads(capsys.readouterr().out)["devices"]
    bf16 = dev["dtypes"]["bf16"]
    assert bf16["ridge_flop_per_byte"] == pytest.approx(990e12 / 3.35e12)
    assert bf16["crossover_batch"] == pytest.approx({"bf16": 295.52, "fp8": 147.76, "int4": 73.88}, rel=1e-4)
    assert set(dev["dtypes"]) == {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"}
    assert "datasheet" in bf16["source"]


def test_specs_sources_lists_every_figure(capsys):
    assert main(["specs", "B200", "--sources"]) == 0
    out = capsys.readouterr().out
    assert "Source: NVIDIA DGX B200 datasheet" in out and "192 GB" in out


def test_specs_unknown_name_is_one_line_exit_2(capsys):
    assert main(["specs", "h1000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown device 'h1000' (closest: H100 SXM" in err


def test_specs_answers_the_valid_names_and_warns_about_the_rest(capsys):
    assert main(["specs", "h200", "nonsense-gpu"]) == 0
    captured = capsys.readouterr()
    assert "H200" in captured.out and "warning: unknown device 'nonsense-gpu'" in captured.err
