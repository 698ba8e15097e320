"""``dlgate config``: a campaign file validated, or the config reference and schema printed."""
from __future__ import annotations

import json

from dlgate.cli.parser import UsageError
from dlgate.gate import config as C
from dlgate.gate.schema import schema_json


def add_parser(sub) -> None:
    cf = sub.add_parser("config", help="validate a campaign config, or print the config reference")
    cf.add_argument("file", nargs="?", metavar="FILE", help="a campaign YAML to validate; its resolved settings are printed as JSON")
    cf.add_argument("--reference", action="store_true", help="print every key as a Markdown table")
    cf.add_argument("--schema", action="store_true", help="print the JSON Schema of campaign files (for editors; "
                    "docs/campaign.schema.json holds a copy)")


def command(args) -> int:
    if args.reference:
        print(C.reference_markdown(), end="")
        return 0
    if args.schema:
        print(schema_json(), end="")
        return 0
    if not args.file:
        raise UsageError("dlgate config: name a config file, or pass --reference or --schema")
    try:
        cfg = C.load(args.file)
    except C.ConfigError as e:
        raise UsageError(f"dlgate config: {e}") from None
    print(json.dumps(cfg.to_json(), indent=1, sort_keys=True))
    return 0
