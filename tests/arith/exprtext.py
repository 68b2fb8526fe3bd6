"""A tiny infix printer for test messages and expected strings (independent of the TVMScript printer)."""
from tensorize.ir import expr as E

_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.LT: "<", E.LE: "<=", E.GT: ">", E.GE: ">=", E.EQ: "==",
          E.NE: "!=", E.And: "and", E.Or: "or"}
_CALL = {E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Min: "min", E.Max: "max", E.Div: "truncdiv",
         E.Mod: "truncmod"}


def text(e) -> str:
    t = type(e)
    if isinstance(e, E.Var):
        return e.name
    if t is E.IntImm:
        return str(bool(e.value)) if e.dtype == "bool" else str(e.value)
    if t in _INFIX:
        return f"({text(e.a)} {_INFIX[t]} {text(e.b)})"
    if t in _CALL:
        return f"{_CALL[t]}({text(e.a)}, {text(e.b)})"
    if t is E.Not:
        return f"not {text(e.a)}"
    if t is E.Select:
        return f"select({text(e.condition)}, {text(e.true_value)}, {text(e.false_value)})"
    if t is E.Cast:
        return f"{e.dtype}({text(e.value)})"
    return repr(e)
