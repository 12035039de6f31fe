"""A pytest plugin that runs one shard of a test file: with JOULES_TEST_SHARD=i/n in the
environment, the i-th of n parts of its cases (tests/CMakeLists.txt registers such a file as n
ctest tests, joules_add_pytest's SHARDS, so that its cases run side by side).

Each case is a part of its own, unless the file defines `shard_group(item)`: the cases with one
group stay in one shard, in their order (examples of one document that use each other's files).
Groups go, the largest first, to the shard with the fewest cases, so that every shard is dealt
the same cases however many run."""
import os


def shard_of_environment():
    value = os.environ.get("JOULES_TEST_SHARD", "")
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise ValueError(f"JOULES_TEST_SHARD={value!r}: expected i/n with 1 <= i <= n")
    return int(index), int(count)


def group_of(item):
    key = getattr(item.module, "shard_group", None)
    return key(item) if key else item.nodeid


def pytest_collection_modifyitems(config, items):
    index, count = shard_of_environment()
    groups = {}
    for item in items:
        groups.setdefault(group_of(item), []).append(item)
    sizes = [0] * count
    shard_of = {}
    for key in sorted(groups, key=lambda k: -len(groups[k])):  # stable: ties keep their order
        least = sizes.index(min(sizes))
        shard_of[key] = least + 1
        sizes[least] += len(groups[key])
    kept = [item for item in items if shard_of[group_of(item)] == index]
    dropped = [item for item in items if shard_of[group_of(item)] != index]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept
