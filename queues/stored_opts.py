"""A job's options as BullMQ stores them and as its users name them.

Node's ``Job.optsAsJSON`` stores a few options under short names (``optsEncodeMap``) and splits
``telemetry`` into two fields; ``Job.optsFromJSON`` turns them back (``optsDecodeMap``). The job
page shows options under their real names with this, and the scheduler edit writes templates
with it, so both agree with Node.

Framework-free.
"""

from __future__ import annotations

from typing import Any

ENCODE = {
    "deduplication": "de",
    "failParentOnFailure": "fpof",
    "continueParentOnFailure": "cpof",
    "ignoreDependencyOnFailure": "idof",
    "removeDependencyOnFailure": "rdof",
    "keepLogs": "kl",
}
DECODE = {v: k for k, v in ENCODE.items()}
# ``telemetry`` is stored as two fields of its own (Node's ``optsAsJSON``).
TELEMETRY = {"metadata": "tm", "omitContext": "omc"}


def options_from_stored(stored: Any) -> Any:
    """``Job.optsFromJSON``: the stored options under their real names, telemetry put back
    together; anything but a JSON object is returned as it is."""
    if not isinstance(stored, dict):
        return stored
    options: dict = {}
    telemetry: dict = {}
    for name, value in stored.items():
        if name in DECODE:
            options[DECODE[name]] = value
        elif name == TELEMETRY["metadata"]:
            telemetry["metadata"] = value
        elif name == TELEMETRY["omitContext"]:
            telemetry["omitContext"] = value
        else:
            options[name] = value
    if telemetry:
        options["telemetry"] = telemetry
    return options


def encode_opts(opts: dict) -> dict:
    """Options as Node stores them (``optsAsJSON``: short names, telemetry split): a scheduler's
    template, a one-off from it."""
    out = {ENCODE.get(k, k): v for k, v in opts.items() if k != "telemetry"}
    for field, short in TELEMETRY.items():
        if field in (opts.get("telemetry") or {}):
            out[short] = opts["telemetry"][field]
    return out


def decode_opts(stored: dict) -> dict:
    """Stored options back in BullMQ's names (``Job.optsFromJSON``), for a dict."""
    return options_from_stored(stored)
