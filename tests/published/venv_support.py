"""What the published-model test scripts share: moving into the test venv before anything from it
is imported. Standard library only, since it runs under whichever python3 ctest starts."""
import os
import sys

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests


def enter_venv(venv, tool):
    """Re-executes the calling script with `venv`'s python unless already running in it; exits
    SKIP when the venv does not exist (scripts/setup-test-venv makes it)."""
    python = os.path.join(venv, "bin", "python")
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    if not os.access(python, os.X_OK):
        print(f"{tool}: no venv at {venv} (scripts/setup-test-venv {venv} makes it); skipping")
        sys.exit(SKIP)
    os.execv(python, [python, os.path.abspath(sys.argv[0])] + sys.argv[1:])
