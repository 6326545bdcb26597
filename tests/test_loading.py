"""Loading: every TARGET form, default and overridden inputs, --submodule, and user errors."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import torch

from fxtui.core.errors import FxtuiError
from fxtui.core.settings import parse_shape
from fxtui.measure.targets import load_target

pytestmark = pytest.mark.unit

MODEL_SOURCE = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        return self.head(self.stem(x) * 2)


net = Net()
NOT_A_MODEL = 3


def make():
    return Net()


def make_with_inputs():
    return Net(), torch.ones(4, 8)


def make_with_two_inputs():
    return Net(), (torch.ones(4, 8), torch.ones(4, 8))


def broken():
    raise ValueError("no weights\\nin this directory")


def make_number():
    return 42
"""


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Refuse every connection and point torch.hub at an empty directory; yields that directory."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("fxtui tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    hub = tmp_path / "torch_home"
    monkeypatch.setenv("TORCH_HOME", str(hub))
    return hub


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(MODEL_SOURCE)
    return path


@pytest.fixture
def model_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    package = tmp_path / "pkgroot" / "zoo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "nets.py").write_text(MODEL_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path / "pkgroot"))
    return "zoo.nets"


def user_error(target: str, **kwargs: Any) -> str:
    """The FxtuiError message load_target raises, checked to be one line."""
    with pytest.raises(FxtuiError) as info:
        load_target(target, **kwargs)
    message = str(info.value)
    assert message and "\n" not in message
    assert "Traceback" not in message
    return message


# -- torchvision names -----------------------------------------------------------------


def test_torchvision_classifier_defaults() -> None:
    loaded = load_target("resnet18")
    assert loaded.name == "resnet18"
    assert not loaded.module.training
    assert loaded.input_desc == ("1×3×224×224",)
    assert loaded.inputs.args[0].shape == (1, 3, 224, 224)
    assert loaded.dtype == "float32"
    assert loaded.kind == "classification"
    assert loaded.module(*loaded.inputs.args).shape == (1, 1000)


def test_classifier_input_size_comes_from_its_weights() -> None:
    # EfficientNet-B1's reference crop is 240, not the usual 224.
    assert load_target("efficientnet_b1").input_desc == ("1×3×240×240",)


def test_random_weights_are_reproducible() -> None:
    a, b = load_target("squeezenet1_1"), load_target("squeezenet1_1")
    torch.testing.assert_close(a.inputs.args, b.inputs.args)
    for pa, pb in zip(a.module.parameters(), b.module.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_video_and_optical_flow_defaults() -> None:
    assert load_target("r3d_18").input_desc == ("1×3×16×112×112",)
    flow = load_target("raft_small")
    assert len(flow.inputs.args) == 2
    for image in flow.inputs.args:
        assert image.shape[:2] == (1, 3)
        assert image.shape[2] % 8 == 0 and image.shape[3] % 8 == 0


def test_segmentation_default(no_network: Path) -> None:
    loaded = load_target("lraspp_mobilenet_v3_large")
    assert loaded.input_desc == ("1×3×224×224",)
    assert not no_network.exists()


def test_detection_builds_without_network(no_network: Path) -> None:
    loaded = load_target("fasterrcnn_mobilenet_v3_large_320_fpn")
    assert loaded.kind == "detection"
    assert loaded.input_desc == ("list[3×320×320]",)
    assert isinstance(loaded.inputs.args[0], list)
    with torch.inference_mode():
        (detections,) = loaded.module(*loaded.inputs.args)
    assert "boxes" in detections
    assert not no_network.exists()


def test_quantizable_model_builds_without_network(no_network: Path) -> None:
    loaded = load_target("quantized_shufflenet_v2_x0_5")
    assert loaded.input_desc == ("1×3×224×224",)
    assert not no_network.exists()


def test_input_shape_and_dtype_override() -> None:
    loaded = load_target("resnet18", input_shapes=[(2, 3, 64, 64)], dtype="float64")
    assert loaded.input_desc == ("2×3×64×64",)
    assert loaded.dtype == "float64"
    assert loaded.inputs.args[0].dtype == torch.float64
    assert all(p.dtype == torch.float64 for p in loaded.module.parameters())
    assert loaded.module(*loaded.inputs.args).shape == (2, 1000)


def test_detection_input_shapes_are_images() -> None:
    loaded = load_target("ssdlite320_mobilenet_v3_large", input_shapes=[(2, 3, 96, 128), (3, 64, 64)])
    assert loaded.input_desc == ("list[3×96×128, 3×96×128, 3×64×64]",)


# -- package.module:attr and file.py:attr ------------------------------------------------


@pytest.mark.parametrize("attr", ["Net", "net", "make"])
def test_package_target_forms_need_shapes(model_package: str, attr: str) -> None:
    message = user_error(f"{model_package}:{attr}")
    assert "--input-shape" in message
    loaded = load_target(f"{model_package}:{attr}", input_shapes=[(4, 8)])
    assert loaded.name == f"zoo.nets:{attr}"
    assert loaded.input_desc == ("4×8",)
    assert loaded.module(*loaded.inputs.args).shape == (4, 2)


@pytest.mark.parametrize("attr", ["Net", "net", "make"])
def test_file_target_forms(model_file: Path, attr: str) -> None:
    loaded = load_target(f"{model_file}:{attr}", input_shapes=[(3, 8)])
    assert loaded.name == f"model.py:{attr}"
    assert type(loaded.module).__name__ == "Net"
    assert not loaded.module.training
    assert loaded.module(*loaded.inputs.args).shape == (3, 2)


def test_factory_example_inputs(model_file: Path) -> None:
    loaded = load_target(f"{model_file}:make_with_inputs")
    assert loaded.input_desc == ("4×8",)
    two = load_target(f"{model_file}:make_with_two_inputs")
    assert two.input_desc == ("4×8", "4×8")
    converted = load_target(f"{model_file}:make_with_inputs", dtype="bfloat16")
    assert converted.inputs.args[0].dtype == torch.bfloat16
    assert converted.module.get_parameter("head.weight").dtype == torch.bfloat16


def test_same_file_name_twice_loads_separately(tmp_path: Path) -> None:
    for n in (1, 2):
        (tmp_path / f"d{n}").mkdir()
        (tmp_path / f"d{n}" / "model.py").write_text(f"import torch\nmake = lambda: torch.nn.Linear({n}, 1)\n")
    a = load_target(f"{tmp_path}/d1/model.py:make", input_shapes=[(1, 1)])
    b = load_target(f"{tmp_path}/d2/model.py:make", input_shapes=[(1, 2)])
    assert (a.module.in_features, b.module.in_features) == (1, 2)


def test_file_can_import_its_neighbours(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text("import torch\nclass Block(torch.nn.Linear):\n    pass\n")
    (tmp_path / "main.py").write_text("from blocks import Block\ndef make():\n    return Block(2, 2)\n")
    assert type(load_target(f"{tmp_path}/main.py:make", input_shapes=[(1, 2)]).module).__name__ == "Block"


# -- --submodule -------------------------------------------------------------------------


def test_submodule_inputs_are_captured_from_a_full_run(model_file: Path) -> None:
    loaded = load_target(f"{model_file}:make_with_inputs", submodule="head")
    assert loaded.name == "model.py:make_with_inputs.head"
    assert type(loaded.module).__name__ == "Linear"
    # What Net.forward passes to head: stem's output times two.
    parent = load_target(f"{model_file}:make_with_inputs")
    with torch.no_grad():
        expected = parent.module.get_submodule("stem")(parent.inputs.args[0]) * 2
    torch.testing.assert_close(loaded.inputs.args[0], expected)
    # Usable outside inference mode too (a run that records autograd would reject inference tensors).
    assert loaded.module(*loaded.inputs.args).shape == (4, 2)


def test_detection_backbone_submodule(no_network: Path) -> None:
    loaded = load_target("fasterrcnn_mobilenet_v3_large_320_fpn", submodule="backbone")
    assert loaded.name == "fasterrcnn_mobilenet_v3_large_320_fpn.backbone"
    assert len(loaded.inputs.args) == 1
    assert loaded.inputs.args[0].dim() == 4 and loaded.inputs.args[0].shape[:2] == (1, 3)


def test_submodule_with_given_shapes() -> None:
    loaded = load_target("resnet18", submodule="layer2.0", input_shapes=[(1, 64, 8, 8)])
    assert loaded.name == "resnet18.layer2.0"
    assert loaded.module(*loaded.inputs.args).shape == (1, 128, 4, 4)


def test_unknown_submodule_lists_children() -> None:
    message = user_error("resnet18", submodule="layer9")
    assert "layer9" in message and "layer1" in message and "conv1" in message
    message = user_error("resnet18", submodule="layer1.7")
    assert "layer1.0" in message and "layer1.1" in message


# -- user errors ------------------------------------------------------------------------


def test_unknown_model_suggests_close_names() -> None:
    message = user_error("resnet19")
    assert "resnet19" in message and "resnet18" in message


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("a:b:c", "cannot read the target 'a:b:c': write package.module:attr or path/file.py:attr"),
        ("zoo.nets:", "both the module and the attribute are needed"),
        (":Net", "both the module and the attribute are needed"),
        ("zoo.nets:not-an-attr", "'not-an-attr' is not a Python attribute name"),
        ("   ", "name a model to profile, e.g. resnet18"),
    ],
)
def test_malformed_targets(target: str, words: str) -> None:
    assert words in user_error(target)


def test_file_or_module_without_attribute_says_how_to_name_it() -> None:
    assert "model.py:ClassOrFactory" in user_error("model.py")
    assert "zoo.nets:ClassOrFactory" in user_error("zoo.nets")


def test_missing_file_module_and_attribute(tmp_path: Path, model_file: Path) -> None:
    assert "no such file" in user_error(f"{tmp_path}/absent.py:Net")
    assert "fxtui_no_such_module" in user_error("fxtui_no_such_module.sub:Net")
    assert "Missing" in user_error(f"{model_file}:Missing")


def test_bad_attributes_and_factories(model_file: Path) -> None:
    assert "int" in user_error(f"{model_file}:NOT_A_MODEL")
    message = user_error(f"{model_file}:broken")
    assert "model.py:broken" in message and "ValueError" in message and "no weights" in message
    assert "int" in user_error(f"{model_file}:make_number")


def test_file_that_raises_on_import(tmp_path: Path) -> None:
    path = tmp_path / "bad.py"
    path.write_text("raise RuntimeError('cannot start')\n")
    message = user_error(f"{path}:Net")
    assert "RuntimeError" in message and "cannot start" in message


def test_missing_dependency_inside_a_module_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "needs_dep.py").write_text("import fxtui_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    message = user_error("needs_dep:Net")
    assert "importing needs_dep" in message and "fxtui_absent_dependency" in message


def test_bad_dtype_and_shape_count() -> None:
    assert "float16" in user_error("resnet18", dtype="int8")
    assert "2 --input-shape" in user_error("resnet18", input_shapes=[(1, 3, 8, 8), (1, 3, 8, 8)])


def test_parse_shape() -> None:
    assert parse_shape("5,3,224,224") == (5, 3, 224, 224)
    assert parse_shape("5x3x224x224") == (5, 3, 224, 224)
    assert parse_shape(" 1 × 8 ") == (1, 8)
    for bad, words in [
        ("", "cannot read the shape ''"),
        ("3,a", "cannot read the shape '3,a': write sizes separated by commas or x"),
        ("3,,4", "cannot read the shape '3,,4'"),
        ("0,3", "cannot use the shape '0,3': every size must be at least 1"),
        ("-1,3", "cannot use the shape '-1,3': every size must be at least 1"),
    ]:
        with pytest.raises(FxtuiError) as info:
            parse_shape(bad)
        assert "\n" not in str(info.value) and str(info.value).startswith(words)


def test_input_shapes_keep_the_kind_of_a_factorys_example_inputs(tmp_path: Path) -> None:
    path = tmp_path / "masked.py"
    path.write_text(
        "import torch\n"
        "from torch import nn\n\n"
        "class Masked(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.emb = nn.Embedding(7, 4)\n\n"
        "    def forward(self, ids, mask, x):\n"
        "        return self.emb(ids) * mask.unsqueeze(-1) + x.unsqueeze(-1)\n\n"
        "def make():\n"
        "    return Masked(), (torch.tensor([[3, 6]]), torch.tensor([[True, False]]), torch.zeros(1, 2))\n"
    )
    loaded = load_target(f"{path}:make", input_shapes=[(4, 50), (4, 50), (4, 50)], dtype="float64")
    ids, mask, x = loaded.inputs.args
    # Token ids stay integers within the example's range, a mask stays boolean, floats take --dtype.
    assert ids.dtype == torch.int64 and int(ids.min()) >= 3 and int(ids.max()) <= 6
    assert len(ids.unique()) > 1
    assert mask.dtype == torch.bool and x.dtype == torch.float64
    assert loaded.module(*loaded.inputs.args).shape == (4, 50, 4)


def test_a_model_keeps_its_own_dtype_without_dtype_option(tmp_path: Path) -> None:
    path = tmp_path / "half.py"
    path.write_text("import torch\nfrom torch import nn\n\ndef make():\n    return nn.Linear(4, 2).to(torch.float64)\n")
    loaded = load_target(f"{path}:make", input_shapes=[(3, 4)])
    assert loaded.dtype == "float64"
    assert loaded.module.weight.dtype == torch.float64 and loaded.inputs.args[0].dtype == torch.float64
    converted = load_target(f"{path}:make", input_shapes=[(3, 4)], dtype="float32")
    assert converted.module.weight.dtype == torch.float32 and converted.dtype == "float32"
