"""A model's part called at the top by the model's own method (``model.decode(z)``) is told from the script's calls."""

from __future__ import annotations

import pytest
from torch import nn

from fxtui.agent.model_methods import called_by_its_model
from fxtui.ops.namer import OpNamer

pytestmark = pytest.mark.unit


class Autoencoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.Linear(4, 2)
        self.dec = nn.Sequential(nn.Linear(2, 4))

    def decode(self, namer: OpNamer, part: nn.Module) -> bool:
        return module_call(namer, part)


# Stand-ins for the frames between the program's call and the check: Module.__call__, its dispatch, the root call.
def module_call(namer: OpNamer, part: nn.Module) -> bool:
    return dispatch(namer, part)


def dispatch(namer: OpNamer, part: nn.Module) -> bool:
    return root_call(namer, part)


def root_call(namer: OpNamer, part: nn.Module) -> bool:
    return called_by_its_model(namer, part)


def test_a_part_called_by_its_models_method_is_the_models_not_a_call_of_its_own() -> None:
    model, namer = Autoencoder(), OpNamer()
    namer.add_root(model)
    assert model.decode(namer, model.enc) and model.decode(namer, model.dec[0])
    assert not module_call(namer, model.enc)  # called by the script itself: a call at the top like any other
    assert not model.decode(namer, model)  # the model itself is its forward, never a part
    other, stranger = Autoencoder(), OpNamer()
    stranger.add_root(other)
    assert not model.decode(stranger, other.enc)  # a part of another model
