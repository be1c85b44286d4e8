"""GPU tests skip loudly without a GPU (as the Rust suites do) and fail under
LOCKSTEP_REQUIRE_GPU=1. Run only them: `LOCKSTEP_REQUIRE_GPU=1 pytest python/tests -k gpu`."""

import os

import pytest

import lockstep

REQUIRE_GPU = os.environ.get("LOCKSTEP_REQUIRE_GPU") == "1"


@pytest.fixture(scope="session")
def gpu():
    info = lockstep.gpu_info()
    if not info["available"]:
        if REQUIRE_GPU:
            pytest.fail(f"LOCKSTEP_REQUIRE_GPU=1 but no GPU: {info['reason']}")
        print(f"\nSKIPPED (no GPU): {info['reason']}")
        pytest.skip(f"no GPU: {info['reason']}")
    return info
