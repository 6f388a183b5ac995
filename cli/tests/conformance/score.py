#!/usr/bin/env python3
"""Scores a conformance run of tests/conformance/run.sh against the expectations.

    score.py OUT_DIR CLIENT_EXPECTED SERVER_EXPECTED [OVERRIDES]   compare, print the table, exit 1 on a surprise
    score.py --list-clients EXPECTED SUITE             the client scenarios of SUITE, one a line

OUT_DIR holds one folder per suite leg (`server-0.1.16`, `server-0.2.0-alpha.12`,
`client-0.1.16`, `client-0.2.0-alpha.12`), each with the suite's result folders
(`[server-]NAME-<timestamp>/checks.json`) and, for the client legs, `NAME.rc` (the suite's exit
status for that scenario) and for the server legs `suite.log` (its output).

A server scenario passes when its checks hold no FAILURE (the suite's own rule for servers: a
WARNING, a SHOULD not met, is shown but does not fail it); a client scenario passes when the suite
exited 0 for it (its rule for clients: no FAILURE, no WARNING, no timeout, and the client exited
0). Checks are counted as the suite counts them: SUCCESS out of SUCCESS and FAILURE (WARNING, INFO
and SKIPPED are not scored).

OVERRIDES (TOML, same shape) replaces some scenarios' expectations (the bridge's run). An
expectation "either: why" takes a pass and a failure alike (an outcome that depends on timing).

The expectations (TOML): a table per leg, `[server."0.1.16"]` and so on, mapping each scenario
to "pass" or "fail: why". Any scenario whose outcome differs from its expectation is a surprise
(an unexpected failure, or an unexpected pass: the file must stay true), and so is a scenario that
ran but is not listed or is listed and did not run.
"""

import json
import re
import sys
import tomllib
from pathlib import Path

STAMP = re.compile(r"-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
LEGS = [
    ("server", "0.1.16", "server 0.1.16 (2025-11-25, active suite)"),
    ("server", "0.2.0-alpha.12", "server 0.2.0-alpha.12 (--requirements 2026-07-28)"),
    ("client", "0.1.16", "client 0.1.16 (2025-11-25)"),
    ("client", "0.2.0-alpha.12", "client 0.2.0-alpha.12 (--spec-version 2026-07-28)"),
]


def load(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def results(leg_dir, side):
    """scenario -> list of checks, from the suite's result folders."""
    out = {}
    if not leg_dir.is_dir():
        return out
    # A scenario named with a slash (`auth/metadata-default`) has its folder one level down.
    for checks in sorted(leg_dir.rglob("checks.json")):
        d = checks.parent
        name = STAMP.sub("", d.relative_to(leg_dir).as_posix())
        if side == "server":
            name = name.removeprefix("server-")
        try:
            out[name] = json.loads(checks.read_text())
        except json.JSONDecodeError as e:
            out[name] = [{"id": "(checks.json)", "status": "FAILURE", "errorMessage": str(e)}]
    return out


def unscored(log):
    """Scenarios the 0.2 suite ran but does not score for the revision (extensions, pending)."""
    names, inside = set(), False
    for line in log.splitlines():
        if line.startswith("Not scored for"):
            inside = True
            continue
        m = re.match(r"\s+\S+\s+(\S+)\s+\((extension|pending)\)", line) if inside else None
        if m:
            names.add(m.group(1))
        elif inside and line.strip():
            inside = False
    return names


def count(checks):
    scored = [c for c in checks if c.get("status") in ("SUCCESS", "FAILURE")]
    return sum(c.get("status") == "SUCCESS" for c in scored), len(scored)


def main(argv):
    if argv[1:2] == ["--list-clients"]:
        for name in load(argv[2]).get("client", {}).get(argv[3], {}):
            print(name)
        return 0
    out_dir, client_expected, server_expected = Path(argv[1]), load(argv[2]), load(argv[3])
    if len(argv) > 4:
        for side, legs in load(argv[4]).items():
            for version, scenarios in legs.items():
                server_expected.setdefault(side, {}).setdefault(version, {}).update(scenarios)
    rows, surprises, notes = [], [], []
    for side, version, title in LEGS:
        leg_dir = out_dir / f"{side}-{version}"
        if not leg_dir.is_dir():
            continue
        expected = (client_expected if side == "client" else server_expected).get(side, {})
        expected = expected.get(version, {})
        got = results(leg_dir, side)
        log = leg_dir / "suite.log"
        extra = unscored(log.read_text(errors="replace")) if log.is_file() else set()
        passed_s = passed_c = total_c = 0
        req_s = req_total = 0
        for name in sorted(set(got) | set(expected)):
            checks = got.get(name)
            want = expected.get(name)
            if checks is None:
                rc = leg_dir / f"{name}.rc"
                why = f"exit {rc.read_text().strip()}" if rc.is_file() else "no result folder"
                surprises.append(f"{side} {version} {name}: did not run ({why}); expected {want}")
                continue
            ok_c, n_c = count(checks)
            passed_c += ok_c
            total_c += n_c
            if side == "client":
                rc = leg_dir / f"{name}.rc"
                passed = rc.is_file() and rc.read_text().strip() == "0"
            else:
                passed = not any(c.get("status") == "FAILURE" for c in checks)
            passed_s += passed
            if name not in extra:
                req_total += 1
                req_s += passed
            failing = [
                f"      {c.get('status')} {c.get('id')}: {(c.get('errorMessage') or '')[:200]}"
                for c in checks
                if c.get("status") in ("FAILURE", "WARNING")
            ]
            if want is not None and want.startswith("either:"):
                notes.append((f"{side} {version}", want.removeprefix("either:").strip(), name))
            elif want is None:
                surprises.append(f"{side} {version} {name}: ran but is not in the expectations"
                                 f" ({'pass' if passed else 'fail'})")
            elif want == "pass" and not passed:
                surprises.append(f"{side} {version} {name}: UNEXPECTED FAILURE\n" + "\n".join(failing))
            elif want != "pass" and passed:
                surprises.append(f"{side} {version} {name}: UNEXPECTED PASS (expected {want!r});"
                                 " update the expectations")
            elif want != "pass":
                notes.append((f"{side} {version}", want.removeprefix("fail:").strip(), name))
        n_s = len(got)
        row = f"| {title} | {passed_s}/{n_s} | {passed_c}/{total_c} |"
        if extra:
            row += f" {req_s}/{req_total} required for the revision ({n_s - req_total} extension/pending not scored) |"
        else:
            row += " |"
        rows.append(row)
    print("| suite | scenarios passed | checks passed | note |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    if notes:
        print("\nexpected failures (documented in the expectations):")
        grouped = {}
        for leg, why, name in notes:
            grouped.setdefault((leg, why), []).append(name)
        for (leg, why), names in grouped.items():
            print(f"  {leg}: {why}: {', '.join(names)}")
    if surprises:
        print(f"\n{len(surprises)} outcome(s) differ from the expectations:", file=sys.stderr)
        print("\n".join(f"  {s}" for s in surprises), file=sys.stderr)
        return 1
    print("\nevery outcome is as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
