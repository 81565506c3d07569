"""Replace one dtype's picks in a tuning table with those of a newer `codegen tune` run (e.g.
after adding kernels of that dtype), keeping every other pick and the header; the command line
records both runs. Usage: python .ci/merge-tuning.py TABLE NEW_RUN DTYPE "COMMAND OF NEW RUN"."""

import sys
import tomllib
from pathlib import Path


def blocks(text: str) -> tuple[str, list[str]]:
    head, *picks = text.split("[[pick]]\n")
    return head, ["[[pick]]\n" + p for p in picks]


def key(block: str) -> tuple:
    pick = tomllib.loads(block)["pick"][0]
    return pick["dtype"], pick.get("out_dtype"), pick["m"], pick["n"], pick["k"]


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
    head = head.replace(
        f'command = "{doc["command"]}"',
        f'command = "{doc["command"]}; then {command} (its {dtype} picks replace the earlier ones'
        + (" of the shapes it measured" if by_shape else "")
        + ')"',
    )
    text = head + "".join(b if b.endswith("\n\n") else b + "\n" for b in keep + add)
    table.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    tomllib.loads(table.read_text(encoding="utf-8"))
    print(f"{table}: kept {len(keep)} picks, replaced the {dtype} ones with {len(add)}")


if __name__ == "__main__":
    main()
