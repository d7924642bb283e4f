"""Server-side Python syntax highlighting with the stdlib ``tokenize`` module (no pygments).

:func:`highlight_python` returns HTML in which every character of the source is escaped and the
original text is reproduced exactly (whitespace, comments, continuation lines); tokens are
wrapped in ``<span class="tok-...">``. Source that does not tokenize (a truncated candidate) is
returned escaped, without colours.
"""

from __future__ import annotations

import builtins
import html
import io
import keyword
import token
import tokenize

_BUILTINS = frozenset(n for n in dir(builtins) if not n.startswith("_"))
_CONSTANTS = frozenset({"True", "False", "None"})
# Names worth telling apart in kernel code: the Triton and torch namespaces.
_NAMESPACES = frozenset({"tl", "triton", "torch", "nn", "F", "np", "math"})
_STRING_TYPES = {token.STRING}
for _name in ("FSTRING_START", "FSTRING_MIDDLE", "FSTRING_END"):  # Python 3.12+
    if hasattr(token, _name):
        _STRING_TYPES.add(getattr(token, _name))


def _line_offsets(source: str) -> list[int]:
    offsets = [0, 0]  # tokenize rows start at 1
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _css_class(tok: tokenize.TokenInfo, prev_sig: str, in_decorator: bool) -> str | None:
    kind = tok.type
    if in_decorator and (kind == token.NAME or tok.string in ("@", ".")):
        return "dec"
    if kind == token.COMMENT:
        return "com"
    if kind in _STRING_TYPES:
        return "str"
    if kind == token.NUMBER:
        return "num"
    if kind == token.OP:
        return "op"
    if kind != token.NAME:
        return None
    name = tok.string
    if prev_sig in ("def", "class"):
        return "def"
    if name in _CONSTANTS:
        return "const"
    if keyword.iskeyword(name) or keyword.issoftkeyword(name):
        return "kw"
    if name == "self":
        return "self"
    if name in _NAMESPACES:
        return "ns"
    if name in _BUILTINS:
        return "bi"
    return None


def highlight_python(source: str) -> str:
    """Escaped HTML of ``source`` with token spans; exact text round-trip (tags stripped)."""
    offsets = _line_offsets(source)
    out: list[str] = []
    pos = 0
    prev_sig = ""
    line_start = True
    in_decorator = False  # from a line-leading "@" up to "(" or the end of the line
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == token.ENDMARKER:
                break
            start = offsets[tok.start[0]] + tok.start[1] if tok.start[0] < len(offsets) else len(source)
            end = offsets[tok.end[0]] + tok.end[1] if tok.end[0] < len(offsets) else len(source)
            if start < pos or not tok.string:
                continue  # DEDENT/zero-width tokens, or a token we already emitted
            out.append(html.escape(source[pos:start]))
            text = source[start:end]
            if tok.type == token.OP and tok.string == "@" and line_start:
                in_decorator = True
            elif tok.type in (token.NEWLINE, token.NL) or tok.string == "(":
                in_decorator = False
            cls = _css_class(tok, prev_sig, in_decorator)
            out.append(f'<span class="tok-{cls}">{html.escape(text)}</span>' if cls else html.escape(text))
            pos = end
            line_start = tok.type in (token.NL, token.NEWLINE, token.INDENT, token.DEDENT)
            if tok.type not in (token.NL, token.NEWLINE, token.INDENT, token.COMMENT):
                prev_sig = tok.string if tok.type == token.NAME else ""
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # keep what was highlighted; the rest is appended plain below
    out.append(html.escape(source[pos:]))
    return "".join(out)


def line_numbers(source: str) -> str:
    """The gutter text: ``1\\n2\\n...`` for each line of ``source``."""
    count = max(1, len(source.splitlines()))
    return "\n".join(str(i) for i in range(1, count + 1))
