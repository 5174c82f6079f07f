"""The whole storage conformance suite (tests/storage/test_*.py), on a real local cluster.

Every test there that takes the ``storage`` or ``redis_storage`` fixture is collected
here once more, unchanged; conftest.py gives those fixtures a ClusterStorage on the
session's 3-primary cluster. Tests that need neither (they build their own client or use
the single Redis) are left to tests/storage. A test added there is picked up here
without edits.
"""

from __future__ import annotations

import inspect

import pytest
from _pytest.fixtures import FixtureFunctionDefinition
from cluster_testlib import SUITE, load_suite_module

CLUSTER_FIXTURES = {"storage", "redis_storage"}

# Tests whose own scaffolding assumes one Redis server; the backend is not at fault.
# strict: once the test is made portable it passes here, and this entry must go.
_KEYS_ON_ONE_NODE = (
    "the test lists keys with KEYS, which RedisCluster sends to one node; "
    "scan_iter() walks every primary"
)
NOT_PORTABLE = {
    "test_every_key_follows_the_layout": _KEYS_ON_ONE_NODE,
    "test_an_orgs_keys_share_one_cluster_slot": _KEYS_ON_ONE_NODE,
    "test_delete_prompt_leaves_no_prompt_keys": _KEYS_ON_ONE_NODE,
    "test_a_big_prompt_is_deleted_in_one_call": (
        "the test pipelines EVALSHA, which redis-py refuses on a cluster"
    ),
}


def _export() -> list[str]:
    exported: dict[str, str] = {}
    for path in sorted(SUITE.glob("test_*.py")):
        module = load_suite_module(path.stem)
        for name, obj in vars(module).items():
            if isinstance(obj, FixtureFunctionDefinition):
                wanted = True  # module fixtures (``ids``, ``prompt``) the tests need
            elif name.startswith("test_") and inspect.isfunction(obj):
                wanted = bool(CLUSTER_FIXTURES & set(inspect.signature(obj).parameters))
            else:
                wanted = False
            if not wanted:
                continue
            if name in exported and globals()[name] is not obj:
                raise RuntimeError(
                    f"{name} is defined in both {exported[name]} and {path.name}: "
                    "rename one so the cluster rerun can tell them apart"
                )
            exported[name] = path.name
            if name in NOT_PORTABLE:
                # A fresh module object of the suite: marking it leaves tests/storage alone.
                obj = pytest.mark.xfail(strict=True, reason=NOT_PORTABLE[name])(obj)
            globals()[name] = obj
    return sorted(exported)


EXPORTED = _export()
