"""A project's guidelines, Markdown, as the HTML raters see (and the settings page previews)."""

import functools

import markdown
import nh3
from django.utils.safestring import SafeString, mark_safe


@functools.lru_cache(maxsize=64)
def guidelines_html(text: str) -> SafeString:
    # nh3 removes scripts, event handlers and javascript: links that the Markdown
    # (which passes raw HTML through) may carry; only then is the result safe.
    # Tables too: a grading scale is most often written as one.
    return mark_safe(nh3.clean(markdown.markdown(text, extensions=["tables"])))
