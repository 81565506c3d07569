"""Replace one dtype's picks in a tuning table with those of a newer `codegen tune` run (e.g.
after adding kernels of that dtype), keeping every other pick and the header; the header's
`commands` array records every run, one per line.

Usage: python .ci/merge-tuning.py TABLE NEW_RUN DTYPE "COMMAND OF NEW RUN" [--by-shape]"""

import json
import sys
import tomllib
from pathlib import Path

from codegen.tune import COMMANDS_NOTE


def blocks(text: str) -> tuple[str, list[str]]:
    head, *picks = text.split("[[pick]]\n")
    return head, ["[[pick]]\n" + p for p in picks]


def key(block: str) -> tuple:
    pick = tomllib.loads(block)["pick"][0]
    return pick["dtype"], pick.get("out_dtype"), pick["m"], pick["n"], pick["k"]


def with_commands(head: str, runs: list[str]) -> str:
    """The table's header with its `command` line or `commands` array replaced by `runs`, one
    command per line, before `versions`."""
    lines, skip = [], False
    for line in head.splitlines():
        if line.startswith("commands = ["):
            skip = line.rstrip() != "commands = []"
            continue
        if skip:
            skip = line.strip() != "]"
            continue
        if line.startswith("command = ") or line == COMMANDS_NOTE:
            continue
        if line.startswith("versions = "):
            lines.append(COMMANDS_NOTE)
            lines += ["commands = ["] + [f"    {json.dumps(r)}," for r in runs] + ["]"]
        lines.append(line)
    return "\n".join(lines) + "\n"


def main() -> None:
    table, new_run, dtype, command = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    by_shape = sys.argv[5:] == ["--by-shape"]
    head, old = blocks(table.read_text(encoding="utf-8"))
    _, new = blocks(new_run.read_text(encoding="utf-8"))
    add = [b for b in new if tomllib.loads(b)["pick"][0]["dtype"] == dtype]
    measured = {key(b) for b in add}
    keep = [
        b
        for b in old
        if tomllib.loads(b)["pick"][0]["dtype"] != dtype or (by_shape and key(b) not in measured)
    ]
    doc = tomllib.loads(head)
    runs = doc.get("commands") or doc["command"].split("; then ")
    runs.append(
        f"{command} (its {dtype} picks replace the earlier ones"
        + (" of the shapes it measured" if by_shape else "")
        + ")"
    )
    head = with_commands(head, runs)
    text = head + "".join(b if b.endswith("\n\n") else b + "\n" for b in keep + add)
    table.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    tomllib.loads(table.read_text(encoding="utf-8"))
    print(f"{table}: kept {len(keep)} picks, replaced the {dtype} ones with {len(add)}")


if __name__ == "__main__":
    main()
