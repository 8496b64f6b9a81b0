"""Every example of the README's tour and of the demo's "Try next" runs, as a user runs it, and
answers what its comment says (issue 31): a command added without a check here fails the test."""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable

from tests.api.test_cli import ROOT, cli

README = ROOT / "README.md"
GANG = "team-a/vision-pretrain"


def readme_commands() -> list[str]:
    """The ``$P ...`` lines of the README's code blocks and the inline ``$P ...`` examples, in order."""
    text = README.read_text()
    out: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$P "):
                out.append(re.split(r"\s{2,}#", line[3:], maxsplit=1)[0].strip())
    out.extend(m.strip() for m in re.findall(r"`\$P ([^`]+)`", text))
    return out


def _verdict(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("  Verdict:"))


def _blocked(out: str) -> None:
    """Why it waited: Unschedulable, the closest rack, the per-node reasons in upstream's words."""
    assert "Unschedulable" in _verdict(out), out
    assert "Summary:   fits only 1 of 2 pods in the closest rack-4" in out, out
    assert "Insufficient nvidia.com/gpu" in out  # upstream's words
    assert "Unblock:   free 1 more nvidia.com/gpu on node-r4-" in out


def _explain_pending(out: str) -> None:
    _blocked(out)
    assert "Preemption: not taken" in out and "Quota quota-a: used" in out


def _capacity(out: str) -> None:
    assert "node/node-r4-5 created" in out, out


def _schedule(out: str) -> None:
    explained = cli("explain", "podgroup", GANG)
    assert "Verdict:   Scheduled (2/2 pods bound)" in explained.stdout, explained.stdout


def _history(out: str) -> None:
    kinds = [line.split()[2] for line in out.splitlines()[1:] if len(line.split()) > 2]
    order = [
        kinds.index("PodGroupCreated"),
        kinds.index("PodGroupUnschedulable"),
        kinds.index("PodGroupRequeued"),
        kinds.index("PodGroupScheduled"),
    ]
    assert order == sorted(order), out


def _replay(out: str) -> None:
    assert " 0 mismatches" in out, out


def _pods(out: str) -> None:
    rows = [line for line in out.splitlines() if line.startswith("vision-pretrain-")]
    assert len(rows) == 2 and all("node-r4-" in r for r in rows), out


def _wait_times(out: str) -> None:
    assert "wait_s" in out and "vision-pretrain" in out, out


def _job(out: str) -> None:
    assert "Job:       team-b/feature-etl" in out and "Verdict:   Scheduled" in out, out


def checks(at: int) -> dict[str, Callable[[str], None]]:
    return {
        f"explain podgroup {GANG}": _explain_pending,
        "apply -f examples/capacity": _capacity,
        "schedule": _schedule,
        f"history podgroup {GANG}": _history,
        "replay --verify": _replay,
        "get pods -n team-a -l app=vision-pretrain -o wide": _pods,
        f"explain podgroup {GANG} --at {at}": _blocked,
        'db shell --role reporting -c "SELECT namespace, name, round(wait_seconds) AS wait_s '
        'FROM v_group_wait_times ORDER BY 3 DESC"': _wait_times,
        "explain job team-b/feature-etl": _job,
    }


def test_demo_and_readme_examples_answer_what_they_say(database):
    demo = cli("demo", "--capacity", "/nonexistent")
    assert demo.returncode != 0  # the demo refuses a missing path before writing anything
    demo = cli("demo")
    assert demo.returncode == 0, demo.stderr
    first = demo.stdout.splitlines()[1]
    m = re.match(
        r"applied (\d+) manifests from \S+: (\d+) objects .*\((\d+) created or updated, (\d+) unchanged\)",
        first,
    )
    assert m, first
    assert int(m.group(2)) == int(m.group(3)) + int(m.group(4)) and int(m.group(4)) == 0, first
    tail = demo.stdout[demo.stdout.index("Try next:") :].splitlines()[1:]
    demo_cmds = [line.strip().removeprefix("podledger ") for line in tail if line.strip()]
    at = int(next(c for c in demo_cmds if "--at" in c).rsplit(" ", 1)[1])
    table = checks(at)
    # the README's --at is the position the demo prints on a fresh ledger (and explains there)
    readme = readme_commands()
    assert f"explain podgroup {GANG} --at {at}" in readme, (at, readme)
    # the demo's suggestions (the ledger now holds the whole story)
    for cmd in demo_cmds:
        assert cmd in table, f"demo example without a check: {cmd}"
        res = cli(*shlex.split(cmd))
        assert res.returncode == 0, (cmd, res.stderr)
        table[cmd](res.stdout)


def test_readme_tour_answers_what_its_comments_say(database):
    """The tour from its start: the example cluster applied and scheduled (what ``make demo``
    does first), then each README command in order."""
    assert cli("apply", "-f", "examples/cluster").returncode == 0
    assert cli("schedule").returncode == 0
    commands = readme_commands()
    at = int(next(c for c in commands if "--at" in c).rsplit(" ", 1)[1])
    table = checks(at)
    for cmd in commands:
        assert cmd in table, f"README example without a check: {cmd}"
        if "--at" in cmd:
            continue  # the demo's position: checked by the demo test on a fresh demo ledger
        res = cli(*shlex.split(cmd))
        assert res.returncode == 0, (cmd, res.stderr)
        table[cmd](res.stdout)
