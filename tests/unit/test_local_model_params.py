"""What ``providers.local`` relies on in llama-cpp-python to load a model without AMX.

``Llama`` takes no option for llama.cpp's extra buffer types, so the local model wraps
the bindings' default model parameters while it loads (see ``_without_amx``). These
tests fail when llama-cpp-python changes what that relies on.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from types import ModuleType

import pytest

from tests.conftest import require


@pytest.fixture(scope="module")
def llama_module() -> ModuleType:
    available = importlib.util.find_spec("llama_cpp") is not None
    require("llama-cpp-python (pip install '.[local]')", available, "it is not installed")
    import llama_cpp.llama

    module: ModuleType = llama_cpp.llama
    return module


def test_llama_builds_its_model_parameters_from_the_bindings_defaults(
    llama_module: ModuleType,
) -> None:
    source = inspect.getsource(llama_module.Llama.__init__)
    assert "llama_cpp.llama_model_default_params()" in source
    assert llama_module.llama_cpp is sys.modules["llama_cpp.llama_cpp"]


def test_the_default_model_parameters_have_the_extra_buffer_switch(
    llama_module: ModuleType,
) -> None:
    params = llama_module.llama_cpp.llama_model_default_params()
    assert params.use_extra_bufts is True
    params.use_extra_bufts = False
    assert params.use_extra_bufts is False


def test_the_build_says_whether_it_has_amx(llama_module: ModuleType) -> None:
    info = llama_module.llama_cpp.llama_print_system_info()
    assert isinstance(info, bytes)
    assert b"AMX_INT8 = " in info or b"AVX" in info


def test_the_wrap_is_undone_after_the_load(llama_module: ModuleType) -> None:
    from palaestra.providers.local import _without_amx

    before = llama_module.llama_cpp.llama_model_default_params
    with _without_amx():
        params = llama_module.llama_cpp.llama_model_default_params()
        amx = b"AMX_INT8 = 1" in llama_module.llama_cpp.llama_print_system_info()
        assert params.use_extra_bufts is (not amx)
    assert llama_module.llama_cpp.llama_model_default_params is before
