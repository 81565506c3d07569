"""`python -m codegen` and the `codegen` command: Ctrl-C while the command line is still being
imported prints one line and exits 130, like Ctrl-C at any later moment."""

import sys


def main() -> None:
    try:
        from codegen.cli import main as cli_main
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    cli_main()


if __name__ == "__main__":
    main()
