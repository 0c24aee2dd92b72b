"""What the user clicked in a list of the Patterns tab or the pattern editor, as one typed value.

A highlight is an item of one list: a match, a near miss or a declined rewrite of the selected
pass's patterns, a result of the pattern editor, or a site of an onnxscript rule.  The view
keeps it as a ``Highlight``; the page's address and the ids of the buttons carry its text
form, written by ``encode`` and read by ``decode`` — here and nowhere else.

The text forms (the address keeps them, so shared links stay valid):

    match:R:I  miss:R:I  decline:0:I        the Patterns tab: report R's item I, the pass's
                                           decline I
    edit-match:R:I  edit-miss:R:I           the pattern editor
    rule-match:R:I:M/F/B  rule-miss:R:I:M/F/B
                                           an onnxscript rule's site, with the ids it lights
                                           (M matched and B blocking: ids joined by '.', F
                                           the failed node's id or empty), since the panes
                                           have no verdicts of their own
"""

from __future__ import annotations

from dataclasses import dataclass

# Where the clicked item lives (its list), and the prefix of its text form.
PATTERNS, EDITOR, RULES = "patterns", "editor", "rules"
_PREFIX = {PATTERNS: "", EDITOR: "edit-", RULES: "rule-"}
MATCH, MISS, DECLINE = "match", "miss", "decline"
_KINDS = {PATTERNS: (MATCH, MISS, DECLINE), EDITOR: (MATCH, MISS), RULES: (MATCH, MISS)}


@dataclass(frozen=True)
class Highlight:
    """One clicked item: its list (``source``), what it is (``kind``), where it is in that
    list (report ``report``, item ``item``); an onnxscript site also carries the node ids it
    lights."""

    source: str
    kind: str
    report: int
    item: int
    matched: tuple[int, ...] = ()
    failed: int | None = None
    blocking: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in _KINDS.get(self.source, ()):
            raise ValueError(f"no {self.kind!r} item in the {self.source!r} list")

    @classmethod
    def of(cls, source: str, kind: str, report: int, item: int) -> "Highlight":
        return cls(source, kind, report, item)

    def encode(self) -> str:
        """The text form the address and the buttons' ids carry."""
        text = f"{_PREFIX[self.source]}{self.kind}:{self.report}:{self.item}"
        if self.source != RULES:
            return text
        lit = (".".join(map(str, self.matched)), "" if self.failed is None else str(self.failed),
               ".".join(map(str, self.blocking)))
        return f"{text}:{'/'.join(lit)}"

    @classmethod
    def decode(cls, text: "str | Highlight | None") -> "Highlight | None":
        """The value of a text form; None for an empty or unreadable one (an old or edited
        address keeps the rest of its view)."""
        if text is None or isinstance(text, Highlight):
            return text
        source = next((s for s, p in _PREFIX.items() if p and text.startswith(p)), PATTERNS)
        parts = text[len(_PREFIX[source]):].split(":")
        try:
            if source == RULES:
                if len(parts) != 4:
                    return None
                lit = parts[3].split("/")
                if len(lit) != 3:
                    return None
                failed = _ids(lit[1])
                return cls(source, parts[0], int(parts[1]), int(parts[2]), _ids(lit[0]),
                           failed[0] if failed else None, _ids(lit[2]))
            if len(parts) != 3:
                return None
            return cls(source, parts[0], int(parts[1]), int(parts[2]))
        except ValueError:
            return None


def _ids(text: str) -> tuple[int, ...]:
    return tuple(int(i) for i in text.split(".") if i)
