"""Case steps as ``fgraph`` command lines (spec 09): one builder per action, each giving the
:class:`Command` to run or raising NotExpressible for what the CLI cannot say."""

from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass
from typing import Any, Callable

from .adapter import ref_args
from .encoding import dumps_json, stream_text
from .matching import shorten
from .outcomes import NotExpressible

#: ``spill(text, stem)`` writes ``text`` to a file of the case's directory and gives its path
Spill = Callable[[str, str], str]
#: arguments longer than this go through a file (``@PATH``)
LONGEST_ARGUMENT = 100_000


@dataclass
class Command:
    args: list[str]
    write: bool
    stdin: bytes | None = None
    ndjson: bool = False


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _argv_safe(text: str) -> bool:
    return "\x00" not in text and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def ref_arg(value: Any) -> str:
    """A CLI REF argument: a name or an id (a string of digits is an id, 09 §4)."""
    if is_int(value):
        if value < 0:
            raise NotExpressible(f"negative id {value} (the CLI would read it as a name)")
        return str(value)
    if isinstance(value, str):
        if value.isascii() and value.isdigit():
            raise NotExpressible(f"name {value!r} is all digits (the CLI reads it as an id)")
        if not value or not _argv_safe(value):
            raise NotExpressible(f"name {value!r} cannot be an argument")
        return value
    raise NotExpressible(f"selector {shorten(value)} is not a name or an id")


def int_arg(value: Any, what: str) -> str:
    if not is_int(value):
        raise NotExpressible(f"{what} {shorten(value)} is not an integer")
    return str(value)


def text_arg(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _argv_safe(value):
        raise NotExpressible(f"{what} {shorten(value)} is not an argv-safe string")
    return value


def positionals(values: list[str]) -> list[str]:
    """Positional arguments, after ``--`` when one could be read as an option."""
    if any(v.startswith("-") for v in values):
        return ["--", *values]
    return values


def short_args(args: list[str]) -> str:
    text = shlex.join(args)
    return text if len(text) <= 300 else text[:297] + "..."


def _json_arg(value: Any) -> str:
    # ASCII-only JSON text: no raw separators or control characters in argv.
    return dumps_json(value, ascii_only=True)


def _guard_option(command: str, key: str, option: Any) -> str:
    """``--operation-id`` / ``--if-basis-tx``, the options every write command takes."""
    if key == "operation_id":
        return f"--operation-id={text_arg(option, 'operation_id')}"
    if key == "if_basis_tx":
        return f"--if-basis-tx={int_arg(option, 'if_basis_tx')}"
    raise NotExpressible(f"{command} option {key!r} has no CLI form")


def _stream_stdin(value: Any) -> bytes:
    try:
        return stream_text(value).encode("utf-8")
    except UnicodeEncodeError:
        raise NotExpressible("the stream is not encodable as UTF-8") from None


# ---- reads


def query_command(action: str, value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = [f"--query-budget={int_arg(step['budget'], 'budget')}"] if "budget" in step else []
    args.append(action)
    if "args" in step:
        args.append("--args=" + _json_arg(step["args"]))
    if ctx is not None:
        args.append(f"--at={ctx}")
    text = _json_arg(value)
    if text.startswith("@") or text == "-" or len(text) > LONGEST_ARGUMENT:
        text = "@" + spill(text, "query")
    return Command([*args, *positionals([text])], write=False)


def datoms_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    if ctx is not None:
        raise NotExpressible("datoms has no --at")
    if not isinstance(value, dict):
        raise NotExpressible("datoms takes an object of options")
    args = ["datoms"]
    for key, option in value.items():
        if key == "components":
            args.append("--components=" + _json_arg(option))
        elif key in ("source", "cursor"):
            args.append(f"--{key}={text_arg(option, key)}")
        elif key == "limit":
            args.append(f"--limit={int_arg(option, 'limit')}")
        elif key != "index":
            raise NotExpressible(f"datoms option {key!r} has no CLI form")
    if "index" in value:
        args.extend(positionals([text_arg(value["index"], "index")]))
    return Command(args, write=False)


def search_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    """``search`` options as CLI flags; what the CLI cannot say (a non-integer k, a filter
    list that is not an array) is not expressible there."""
    if not isinstance(value, dict):
        raise NotExpressible("search takes an object of keyword arguments")
    args = ["search"]
    for key, option in value.items():
        if key in ("text", "vector_attribute"):
            args.append(f"--{key.replace('_', '-')}={text_arg(option, key)}")
        elif key in ("k", "expand"):
            args.append(f"--{key}={int_arg(option, key)}")
        elif key == "vector":
            args.append(f"--vector={_json_arg(option)}")
        elif key == "filters" and isinstance(option, list):
            args.extend(f"--filter={_json_arg(pair)}" for pair in option)
        elif key == "text_attributes" and isinstance(option, list):
            args.extend(f"--text-attribute={text_arg(name, 'text attribute')}" for name in option)
        else:
            raise NotExpressible(f"search option {key}={shorten(option)} has no CLI form")
    return Command(args, write=False)


def schema_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    if not isinstance(value, dict) or set(value) - {"prefix", "include_system"}:
        raise NotExpressible("schema takes prefix and include_system")
    args = ["schema"]
    if value.get("include_system") is True:
        args.append("--system")
    elif value.get("include_system") not in (None, False):
        raise NotExpressible("include_system must be a boolean on the CLI")
    if value.get("prefix") not in (None, ""):
        args.extend(positionals([text_arg(value["prefix"], "prefix")]))
    return Command(args, write=False)


def entity_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = ["get"]
    if "depth" in step:
        args.append(f"--depth={int_arg(step['depth'], 'depth')}")
    if ctx is not None:
        args.append(f"--at={ctx}")
    return Command([*args, *positionals([ref_arg(value)])], write=False)


def trail_command(action: str, value: Any) -> Command:
    """``history`` / ``why``: a selector and an optional attribute."""
    parts = ref_args(value)
    if not 1 <= len(parts) <= 2:
        raise NotExpressible(f"{action} takes a selector and an optional attribute")
    pos = [ref_arg(parts[0])]
    if len(parts) == 2:
        pos.append(text_arg(parts[1], "attribute"))
    return Command([action, *positionals(pos)], write=False)


def diff_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    if not isinstance(value, list) or len(value) != 2:
        raise NotExpressible("diff takes two times")
    pos = [int_arg(value[0], "diff time"), int_arg(value[1], "diff time")]
    return Command(["diff", *positionals(pos)], write=False)


def events_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    if "through" in value:
        raise NotExpressible("tail has no upper bound (through)")
    args = ["tail"]
    if "since" in value:
        args.append(f"--since={int_arg(value['since'], 'since')}")
    return Command(args, write=False, ndjson=True)


# ---- writes


def add_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = ["add", *(_guard_option("transact", key, option)
                     for key, option in step.get("options", {}).items())]
    text = _json_arg(value)
    if len(text) > LONGEST_ARGUMENT:
        args.append("@" + spill(text, "data"))
    elif text.startswith("@") or text == "-":
        raise NotExpressible("data text would be read as a file name")
    else:
        args.extend(positionals([text]))
    return Command(args, write=True)


_DECLARE_FLAGS = {"ref": ("--ref", "--no-ref"), "many": ("--many", "--one"),
                  "unique": ("--unique", "--not-unique"), "nohistory": ("--nohistory", "--history")}
#: declare options a case may give as null, meaning "not given"
_DECLARE_UNSET = {*_DECLARE_FLAGS, "dims", "doc", "vector_model", "operation_id"}


def declare_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    attr = text_arg(value.get("attr"), "attribute")
    args = ["declare"]
    for key, option in value.items():
        if key == "attr" or (option is None and key in _DECLARE_UNSET):
            continue
        if key == "type":
            args.append(f"--type={text_arg(option, 'type')}")
        elif key in _DECLARE_FLAGS:
            if not isinstance(option, bool):
                raise NotExpressible(f"declare {key}={shorten(option)} is not a boolean")
            args.append(_DECLARE_FLAGS[key][0 if option else 1])
        elif key == "dims":
            args.append(f"--dims={int_arg(option, 'dims')}")
        elif key in ("doc", "vector_model", "operation_id"):
            args.append(f"--{key.replace('_', '-')}={text_arg(option, key)}")
        else:
            args.append(_guard_option("declare", key, option))
    return Command([*args, *positionals([attr])], write=True)


def undo_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    target = int_arg(value.get("target"), "undo target")
    args = ["undo", *(_guard_option("undo", key, option) for key, option in value.items() if key != "target")]
    return Command([*args, *positionals([target])], write=True)


def shape_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    if not isinstance(value, dict) or "name" not in value:
        raise NotExpressible("shape takes an object with a name")
    args = ["shape"]
    for key, option in value.items():
        if key in ("required", "allowed"):
            if not isinstance(option, list):
                raise NotExpressible(f"shape {key} must be a list on the CLI")
            args += [f"--{key}={text_arg(a, key)}" for a in option]
        elif key == "closed":
            if not isinstance(option, bool):
                raise NotExpressible("shape closed must be a boolean on the CLI")
            args.append("--closed" if option else "--open")
        elif key != "name":
            args.append(_guard_option("shape", key, option))
    return Command([*args, *positionals([text_arg(value["name"], "shape name")])], write=True)


def schema_apply_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = ["schema-apply", "-", *(_guard_option("schema_apply", key, option)
                                   for key, option in value.items() if key != "manifest")]
    return Command(args, write=True, stdin=_json_arg(value["manifest"]).encode("utf-8"))


def excise_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    # both options are required on the CLI (07 §2): without them the step is library-only
    if "operation_id" not in value or "if_basis_tx" not in value:
        raise NotExpressible("excise needs --operation-id and --if-basis-tx on the CLI")
    return Command(["excise", f"--operation-id={text_arg(value['operation_id'], 'operation_id')}",
                    f"--if-basis-tx={int_arg(value['if_basis_tx'], 'if_basis_tx')}",
                    *positionals([ref_arg(value["ref"])])], write=True)


def add_stdin_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = ["add", "-"]
    if "batch_size" in value:
        args.append(f"--batch-size={int_arg(value['batch_size'], 'batch_size')}")
    return Command(args, write=True, stdin=base64.b64decode(value["base64"]))


def batch_command(value: Any, step: dict, ctx: Any, spill: Spill) -> Command:
    args = ["add", "-", f"--batch-size={int_arg(value['batch_size'], 'batch_size')}"]
    if "operation_id_prefix" in value:
        args.append(f"--operation-id-prefix={text_arg(value['operation_id_prefix'], 'prefix')}")
    records = "".join(_json_arg(r) + "\n" for r in value["records"])
    return Command(args, write=True, stdin=records.encode("utf-8"))


Builder = Callable[[Any, dict, Any, Spill], Command]

#: every action with a CLI form (``facts`` reads the file itself)
CLI_COMMANDS: dict[str, Builder] = {
    "q": lambda value, step, ctx, spill: query_command("q", value, step, ctx, spill),
    "explain": lambda value, step, ctx, spill: query_command("explain", value, step, ctx, spill),
    "datoms": datoms_command,
    "schema": schema_command,
    "search": search_command,
    "validate": lambda value, step, ctx, spill: Command(["validate", *positionals([ref_arg(value)])], write=False),
    "schema_manifest": lambda value, step, ctx, spill: Command(["schema-export"], write=False),
    "schema_check": lambda value, step, ctx, spill: Command(
        ["schema-check", "-"], write=False, stdin=_json_arg(value).encode("utf-8")),
    "schema_apply": schema_apply_command,
    "shape": shape_command,
    "tx": add_command,
    "declare": declare_command,
    "undo": undo_command,
    "stats": lambda value, step, ctx, spill: Command(["info"], write=False),
    "receipt": lambda value, step, ctx, spill: Command(
        ["tx", *positionals([int_arg(value, "transaction")])], write=False),
    "entity": entity_command,
    "history": lambda value, step, ctx, spill: trail_command("history", value),
    "why": lambda value, step, ctx, spill: trail_command("why", value),
    "diff": diff_command,
    "events": events_command,
    "apply": lambda value, step, ctx, spill: Command(["apply", "-"], write=True, stdin=_stream_stdin(value)),
    # NDJSON; every line must be byte-identical to its canonical form
    "snapshot": lambda value, step, ctx, spill: Command(["snapshot"], write=False, ndjson=True),
    "restore": lambda value, step, ctx, spill: Command(["restore", "-"], write=True, stdin=_stream_stdin(value)),
    "excise": excise_command,
    "add_stdin": add_stdin_command,
    "batch": batch_command,
}
