import pathlib
import re

import pytest

from ninetoothed_ascend import host

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def readme_recipe():
    section = README.read_text().split("## Install on an Ascend host", 1)[1]
    section = section.split("\n## ", 1)[0]

    return [line for line in section.splitlines() if line.startswith("pip install")]


def test_the_readme_recipe_installs_every_requirement_but_triton():
    first, second = readme_recipe()

    assert first.split()[2:] == [
        "--no-deps",
        "ninetoothed==0.26.0",
        "ninetoothed-ascend",
    ]
    assert second.split()[2:] == host.requirements_beside_triton_ascend()
    assert "triton" not in second.split()


def test_requirements_beside_triton_ascend_leave_out_extras_and_triton():
    names = host.requirements_beside_triton_ascend()

    assert "sympy" in names and "click" in names
    assert not {"triton", "pytest", "sphinx", "ninetoothed"} & set(names)
    assert all(re.fullmatch(r"[a-z0-9-]+", name) for name in names)


def test_cuda_triton_is_not_taken_for_triton_ascend():
    # This environment has CUDA Triton: no ``triton/backends/ascend``.
    assert host.version(host.CUDA_TRITON) is not None
    assert host.triton_package_is_ascend() is False


def fake_environment(monkeypatch, versions, is_ascend):
    monkeypatch.setattr(host, "version", versions.get)
    monkeypatch.setattr(host, "triton_package_is_ascend", lambda: is_ascend)

    return {finding.name: finding for finding in host.diagnose()}


@pytest.mark.parametrize(
    ("versions", "is_ascend"),
    [
        # CUDA Triton installed over triton-ascend: both distributions, CUDA's files.
        ({"triton-ascend": "3.2.0", "triton": "3.9.0"}, False),
        # Both installed, triton-ascend's files last.
        ({"triton-ascend": "3.2.0", "triton": "3.9.0"}, True),
        # triton-ascend's record without its files (uninstalled CUDA Triton took them).
        ({"triton-ascend": "3.2.0"}, False),
    ],
)
def test_doctor_reports_a_replaced_triton_ascend_with_the_repair(
    monkeypatch, versions, is_ascend
):
    triton = fake_environment(monkeypatch, versions, is_ascend)["triton"]

    assert triton.fatal
    assert (
        triton.fix
        == "pip uninstall -y triton triton-ascend && pip install triton-ascend==3.2.0"
    )


def test_doctor_accepts_triton_ascend_alone_and_names_a_missing_bishengir(monkeypatch):
    findings = fake_environment(monkeypatch, {"triton-ascend": "3.2.0"}, True)

    assert not any(finding.fatal for finding in findings.values())
    assert "ascendnpu-ir not installed" in findings["bishengir"].detail
    assert findings["bishengir"].fix == "pip install 'ninetoothed-ascend[bishengir]'"
    assert findings["npu devices"].detail == "torch_npu not installed"


def test_doctor_on_cuda_triton_has_no_bishengir_line(monkeypatch):
    findings = fake_environment(monkeypatch, {"triton": "3.9.0"}, False)

    assert not findings["triton"].fatal
    assert "bishengir" not in findings
