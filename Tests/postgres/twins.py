#!/usr/bin/env python3
"""Writes Tests/ShareFlowTests/OnPostgreSQL.swift: for each store test case of the engine, a
twin that runs every one of its tests again on PostgreSQL, in the same `swift test` (SPEC §16
M6). XCTest on Linux runs only the tests a class declares itself, so each twin overrides each
test to call its original. `--check` says whether the file is current (a test runs it).

A class is twinned when its file reaches the store through the test kit (`TestStore.`,
`World(`), except those that already open both drivers themselves (`EachDriver`) or test what
is SQLite's alone. Run `make twins` after adding a test."""
import pathlib, re, sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
FOLDER = ROOT / "Tests" / "ShareFlowTests"
OUT = FOLDER / "OnPostgreSQL.swift"
# Each with why it has no twin.
ALONE = {
    "FaultRuleTests": "fault rules are matched in memory: no store",
    "DecisionLogTests": "runs each test on both drivers itself (EachDriver)",
    "CatalogueTests": "runs each test on both drivers itself (EachDriver)",
    "ScopedWriteTests": "runs each test on both drivers itself (EachDriver)",
    "StatementCountTests": "counts SQLite's statements through its trace hook",
}
TYPE = re.compile(r"^(?:final )?class (\w+): XCTestCase \{|^extension (\w+)\b")
TEST = re.compile(r"^    func (test\w*)\(\)( async)?( throws)? \{")


def twins():
    classes, order = {}, []
    for path in sorted(FOLDER.glob("*.swift")):
        if path == OUT:
            continue
        text = path.read_text()
        uses_store = "TestStore." in text or "World(" in text
        current = None
        for line in text.splitlines():
            m = TYPE.match(line)
            if m:
                current = m.group(1) or m.group(2)
                if m.group(1) and uses_store and current not in ALONE:
                    classes[current] = []
                    order.append(current)
                continue
            if line.startswith("}"):
                current = None
                continue
            t = TEST.match(line)
            if t and current in classes:
                classes[current].append((t.group(1), bool(t.group(2)), bool(t.group(3))))
    out = [
        "// swift-format-ignore-file",
        "// Written by Tests/postgres/twins.py (`make twins`); not edited by hand.",
        "//",
        "// Every store test case of the engine again on PostgreSQL, in the same `swift test`",
        "// (SPEC §16 M6), when a cluster is at hand (SHAREFLOW_TEST_CLUSTER or",
        "// SHAREFLOW_TEST_POSTGRES); skipped otherwise. Without a twin:",
    ] + [f"// - {k}: {v}." for k, v in sorted(ALONE.items())] + [
        "",
        "import ShareFlowEngineTestKit",
        "import XCTest",
    ]
    for name in order:
        out += ["", f"final class {name}OnPostgreSQL: {name} {{",
                "    override func setUpWithError() throws { try TestStore.enterPostgresPass(); try super.setUpWithError() }",
                "    override func tearDown() { super.tearDown(); TestStore.leavePostgresPass() }"]
        for test, is_async, throws in classes[name]:
            effects = (" async" if is_async else "") + (" throws" if throws else "")
            call = ("try " if throws else "") + ("await " if is_async else "") + f"super.{test}()"
            out.append(f"    override func {test}(){effects} {{ {call} }}")
        out.append("}")
    return "\n".join(out) + "\n", order


def main():
    text, order = twins()
    if "--check" in sys.argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is not current: run `make twins`")
            return 1
        return 0
    OUT.write_text(text)
    print(f"{OUT.relative_to(ROOT)}: {len(order)} test cases twinned")
    return 0


sys.exit(main())
