"""The page as text an agent can act on: an accessibility-tree-like list of elements with stable refs.

One ``page.evaluate`` walks the DOM in document order, gives every element it reports a
``data-cg-ref`` attribute (kept while the element lives, so refs are stable across steps), and returns
structured records; Python formats them as lines such as ``[12] button "Submit"``. Refs are assigned in
DOM order on a fresh page, so the same page content gives the same observation every time.

Reported: interactive elements (links, buttons, form fields, ARIA widgets, content-editable regions, and
elements with a click handler of their own: ``onclick``, a pointer cursor, or a click-like listener added
with ``addEventListener``, which ``LISTEN_JS`` records before the page's scripts run) with their state,
and text-bearing elements (headings, paragraphs, cells, list items). Hidden elements are skipped; table
rows without controls collapse to one line. Shadow DOM and iframes are not walked.

Every control gets a name an agent can point at: its label, ``aria-label``, text or ``title``; failing
those (an icon), an image's ``alt``, a ``value``, an SVG ``<title>``, its class (``star``, ``trash``,
``ui-slider-handle``), its id or its tag. A control inside another control is listed under it, indented
(a mail row's star and trash icons); a sentence with clickable words in it is shown whole with its links
under it. A wrapper whose only content is its controls is not listed itself, and a control around a
single control of the same name (a tab and its link) is listed once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Runs before any page script (a context init script): remembers which elements got a click-like
# listener, since a control made clickable by ``addEventListener`` (jQuery, d3) shows nothing in the DOM.
LISTEN_JS = r"""
(() => {
  if (window.__cgListens) return;
  const add = EventTarget.prototype.addEventListener;
  const marked = new WeakSet();
  const CLICKS = new Set(['click', 'dblclick', 'mousedown', 'mouseup', 'pointerdown', 'pointerup', 'touchstart']);
  Object.defineProperty(window, '__cgListens', {value: (el) => marked.has(el)});
  EventTarget.prototype.addEventListener = function (type, listener, options) {
    if (CLICKS.has(type) && this instanceof Element) marked.add(this);
    return add.call(this, type, listener, options);
  };
})();
"""

SNAPSHOT_JS = r"""
(args) => {
  const maxItems = args.maxItems, maxText = args.maxText;
  const items = [];
  let truncated = false;
  let next = window.__cgNextRef || 1;
  const seen = new Set();
  const TEXT_ROLE = {H1:'heading',H2:'heading',H3:'heading',H4:'heading',H5:'heading',H6:'heading',
    LI:'listitem',TD:'cell',TH:'columnheader',IMG:'img',CAPTION:'caption',LEGEND:'legend'};
  const SKIP = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','HEAD','META','LINK','SVG','IFRAME']);
  const INTERACTIVE = new Set(['button','link','checkbox','radio','tab','menuitem','menuitemcheckbox',
    'menuitemradio','option','switch','combobox','listbox','textbox','searchbox','slider','spinbutton',
    'treeitem','clickable']);
  // jQuery UI's styling classes say nothing about what an icon is
  const STYLE_CLASS = /^(ui-(corner|state|widget|helper|front|priority)|ui-button(-icon-only|-icon)?$|ui-icon$|clearfix$)/;
  const clean = (s) => (s || '').replace(/\s+/g, ' ').trim().slice(0, maxText);
  const refOf = (el) => {
    let r = el.getAttribute('data-cg-ref');
    if (!r || seen.has(r)) { r = String(next++); el.setAttribute('data-cg-ref', r); }
    seen.add(r);
    return Number(r);
  };
  const visible = (el) => el.checkVisibility ? el.checkVisibility({visibilityProperty: true}) : true;
  const listens = window.__cgListens || (() => false);
  const pointer = (el) => getComputedStyle(el).cursor === 'pointer';
  function roleOf(el) {
    const explicit = el.getAttribute('role');
    if (explicit && explicit !== 'presentation' && explicit !== 'none') return explicit;
    if (el === document.body) return null;
    switch (el.tagName) {
      case 'A': if (el.hasAttribute('href')) return 'link'; break;
      case 'BUTTON': case 'SUMMARY': return 'button';
      case 'SELECT': return el.multiple ? 'listbox' : 'combobox';
      case 'TEXTAREA': return 'textbox';
      case 'INPUT': {
        const t = (el.type || 'text').toLowerCase();
        if (t === 'hidden') return null;
        if (t === 'checkbox' || t === 'radio') return t;
        if (['button', 'submit', 'reset', 'image'].includes(t)) return 'button';
        if (t === 'range') return 'slider';
        if (t === 'number') return 'spinbutton';
        if (t === 'search') return 'searchbox';
        return 'textbox';
      }
    }
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return 'textbox';
    // a click handler of its own (an attribute, a property, or one added by addEventListener) or focusability
    if (el.hasAttribute('onclick') || typeof el.onclick === 'function' || el.hasAttribute('tabindex')) return 'clickable';
    if (pointer(el) && !(el.parentElement && pointer(el.parentElement))) return 'clickable';
    if (listens(el) && !holdsBlocks(el)) return 'clickable';
    return null;
  }
  // A listener on an element holding several blocks of text is a surface (a sortable list, a drawing
  // area), not a control; a button made of an icon and one line of text is a control.
  function holdsBlocks(el) {
    const blocks = new Set();
    const texts = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let t = texts.nextNode(); t; t = texts.nextNode()) {
      if (!t.textContent.trim()) continue;
      let block = t.parentElement;
      while (block !== el && getComputedStyle(block).display.startsWith('inline')) block = block.parentElement;
      blocks.add(block);
      if (blocks.size > 1) return true;
    }
    return false;
  }
  const roles = new Map();
  const role = (el) => { if (!roles.has(el)) roles.set(el, roleOf(el)); return roles.get(el); };
  const shown = (el) => { const r = el.getBoundingClientRect(); return (r.width > 0 || r.height > 0) && visible(el); };
  const isControl = (el) => INTERACTIVE.has(role(el)) && shown(el);
  // Every element with a shown control somewhere below it: its text is not one flat line.
  const holders = new Set();
  if (document.body) {
    for (const el of document.body.querySelectorAll('*')) {
      if (!isControl(el)) continue;
      for (let p = el.parentElement; p && !holders.has(p); p = p.parentElement) holders.add(p);
    }
  }
  function textOutside(el) {  // the element's text less the text of the controls inside it
    let s = '';
    for (const n of el.childNodes) {
      if (n.nodeType === 3) s += n.textContent;
      else if (n.nodeType === 1 && !SKIP.has(n.tagName) && visible(n) && !isControl(n)) {
        const inline = getComputedStyle(n).display.startsWith('inline');
        s += inline ? textOutside(n) : ' ' + textOutside(n) + ' ';
      }
    }
    return s;
  }
  function classWords(el) {
    const words = Array.from(el.classList || []).filter((c) => !STYLE_CLASS.test(c));
    return words.join(' ');
  }
  function fallbackName(el) {  // a control with no text: an icon, an image, an SVG shape
    const img = el.tagName === 'IMG' ? null : el.querySelector('img[alt]');
    if (img && img.alt) return clean(img.alt);
    if (el.tagName !== 'LI' && el.getAttribute('value')) return clean(el.getAttribute('value'));
    const title = el.querySelector(':scope > title, svg title');
    if (title && title.textContent.trim()) return clean(title.textContent);
    let named = el;
    while (named && !classWords(named) && named.children.length === 1) named = named.children[0];
    return clean(classWords(named || el) || el.id || el.tagName.toLowerCase());
  }
  function nameOf(el) {
    const aria = el.getAttribute('aria-label');
    if (aria) return clean(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) return clean(by.split(/\s+/).map((id) => { const n = document.getElementById(id); return n ? n.innerText : ''; }).join(' '));
    const tag = el.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') {
      const t = (el.type || '').toLowerCase();
      if (['button', 'submit', 'reset'].includes(t)) return clean(el.value || t);
      if (el.labels && el.labels.length) return clean(Array.from(el.labels).map((l) => l.innerText).join(' '));
      return clean(el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || el.getAttribute('alt') || '');
    }
    if (tag === 'IMG') return clean(el.getAttribute('alt') || el.getAttribute('title'));
    if (holders.has(el)) return clean(textOutside(el) || el.getAttribute('title'));  // its controls have their own names
    const text = el.innerText !== undefined ? el.innerText : el.textContent;
    return clean(text || el.getAttribute('title') || '') || fallbackName(el);
  }
  function ownText(el) {
    let s = '';
    for (const n of el.childNodes) if (n.nodeType === 3) s += n.textContent + ' ';
    return clean(s);
  }
  function emit(el, role, name, depth, extra) {
    if (items.length >= maxItems) { truncated = true; return false; }
    const item = Object.assign({ref: refOf(el), role: role, name: name, depth: depth}, extra || {});
    items.push(item);
    return true;
  }
  function controlState(el, role) {
    const s = {};
    const tag = el.tagName;
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') s.disabled = true;
    if (role === 'checkbox' || role === 'radio' || role === 'switch' || role === 'menuitemcheckbox') {
      s.checked = tag === 'INPUT' ? el.checked : el.getAttribute('aria-checked') === 'true';
    }
    if (tag === 'SELECT') {
      s.options = Array.from(el.options).map((o) => clean(o.label || o.text));
      const chosen = Array.from(el.selectedOptions).map((o) => clean(o.label || o.text));
      s.value = el.multiple ? chosen.join(', ') : (chosen[0] || '');
    } else if (tag === 'TEXTAREA' || (tag === 'INPUT' && !['checkbox', 'radio', 'button', 'submit', 'reset', 'image'].includes(el.type))) {
      s.value = el.type === 'password' ? '*'.repeat(el.value.length) : el.value;
      const t = (el.type || '').toLowerCase();
      if (tag === 'INPUT' && !['text', 'search', 'range', 'number'].includes(t)) s.type = t;
      if (el.placeholder && nameOf(el) !== clean(el.placeholder)) s.placeholder = clean(el.placeholder);
    } else if (role === 'textbox' && el.isContentEditable) {
      s.value = clean(el.innerText);
    } else if (el.hasAttribute('aria-valuenow')) {
      s.value = el.getAttribute('aria-valuenow');
    }
    if (tag === 'SUMMARY') s.expanded = !!(el.parentElement && el.parentElement.open);
    else if (el.hasAttribute('aria-expanded')) s.expanded = el.getAttribute('aria-expanded') === 'true';
    if (el.getAttribute('aria-selected') === 'true') s.selected = true;
    if (el.required) s.required = true;
    if (el.readOnly && (tag === 'INPUT' || tag === 'TEXTAREA')) s.readonly = true;
    if (tag === 'TEXTAREA') s.multiline = true;
    return s;
  }
  function walkChildren(el, depth, onlyControls) {
    for (const c of el.children) walk(c, depth, onlyControls);
  }
  // onlyControls: below an element already shown with its text, list only the controls
  function walk(el, depth, onlyControls) {
    if (truncated || SKIP.has(el.tagName) || !visible(el)) return;
    const r = role(el);
    if (onlyControls && !INTERACTIVE.has(r)) {
      if (holders.has(el)) walkChildren(el, depth, true);
      return;
    }
    if ((r === 'listbox' && el.tagName !== 'SELECT') || r === 'tree' || r === 'menu' || r === 'tablist') {
      if (!emit(el, r, clean(el.getAttribute('aria-label') || ''), depth)) return;
      walkChildren(el, depth + 1, false);
      return;
    }
    if (r && INTERACTIVE.has(r)) {
      if (!shown(el)) return;
      let name = nameOf(el);
      if (el.isContentEditable && r === 'textbox') name = clean(el.getAttribute('aria-label') || el.getAttribute('title') || '');
      if (!holders.has(el)) { emit(el, r, name, depth, controlState(el, r)); return; }
      // a control holding controls (a mail row with its star, a tree item with its children)
      const inner = Array.from(el.querySelectorAll('*')).filter(isControl);
      const same = inner.length === 1 && (!name || name === nameOf(inner[0]));
      if (same && r !== 'clickable') {  // a tab and its link: one line, whose ref clicks the inner control
        if (!emit(inner[0], r, name || nameOf(inner[0]), depth, controlState(el, r))) return;
        return;
      }
      if (r === 'clickable' && (same || !name)) {
        walkChildren(el, depth, false);  // only a wrapper around its controls: list those
        return;
      }
      if (!emit(el, r, name, depth, controlState(el, r))) return;
      walkChildren(el, depth + 1, true);
      return;
    }
    if (el.tagName === 'LABEL' && el.control) {  // the control carries the label as its name
      walkChildren(el, depth, false);
      return;
    }
    if (el.tagName === 'TR') {
      if (!holders.has(el)) {
        const cells = Array.from(el.cells).map((c) => clean(c.innerText)).join(' | ');
        emit(el, el.querySelector('th') && !el.querySelector('td') ? 'header' : 'row', cells, depth);
        return;
      }
      if (!emit(el, 'row', '', depth)) return;
      walkChildren(el, depth + 1, false);
      return;
    }
    if (el.tagName === 'DIALOG' || r === 'dialog' || r === 'alertdialog') {
      if (!emit(el, 'dialog', clean(el.getAttribute('aria-label') || el.getAttribute('title') || ''), depth)) return;
      walkChildren(el, depth + 1, false);
      return;
    }
    const own = ownText(el);
    const textRole = TEXT_ROLE[el.tagName] || (r && r !== 'generic' ? r : 'text');
    if (el.tagName === 'IMG') { const alt = nameOf(el); if (alt) emit(el, 'img', alt, depth); return; }
    if (own) {
      if (!holders.has(el)) { emit(el, textRole, clean(el.innerText), depth); return; }
      const inline = Array.from(el.children).every((c) => getComputedStyle(c).display.startsWith('inline'))
        && Array.from(el.querySelectorAll('*')).every((c) => !isControl(c) || role(c) === 'link' || role(c) === 'clickable');
      if (inline) {  // a sentence with links in it: the sentence, then its links
        if (!emit(el, textRole, clean(el.innerText), depth)) return;
        walkChildren(el, depth + 1, true);
        return;
      }
      emit(el, textRole, own, depth);
    }
    walkChildren(el, depth, false);
  }
  if (document.body) walk(document.body, 0, false);
  window.__cgNextRef = next;
  const a = document.activeElement;
  const focused = a && a !== document.body && a.hasAttribute('data-cg-ref') ? Number(a.getAttribute('data-cg-ref')) : null;
  return {url: location.href, title: document.title, items: items, truncated: truncated, focused: focused};
}
"""  # noqa: E501  (JavaScript run in the page: kept as written)

STATE_KEYS = ("disabled", "checked", "expanded", "selected", "required", "readonly", "multiline")


@dataclass
class Element:
    ref: int
    role: str
    name: str
    depth: int = 0
    attrs: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        parts = [f"{'  ' * self.depth}[{self.ref}] {self.role}"]
        if self.name:
            parts.append(_quote(self.name))
        attrs = self.attrs
        if "type" in attrs:
            parts.append(f"type={attrs['type']}")
        if "value" in attrs:
            parts.append(f"value={_quote(str(attrs['value']))}")
        if "options" in attrs:
            parts.append("options=[" + ", ".join(_quote(o) for o in attrs["options"]) + "]")
        if "placeholder" in attrs:
            parts.append(f"placeholder={_quote(attrs['placeholder'])}")
        for key in STATE_KEYS:
            if key in attrs:
                value = attrs[key]
                if key == "checked":
                    parts.append("checked" if value else "unchecked")
                elif key == "expanded":
                    parts.append("expanded" if value else "collapsed")
                elif value:
                    parts.append(key)
        return " ".join(parts)


@dataclass
class PageView:
    """One observation of the page: what the agent reads, and what oracles and tests search."""

    url: str
    title: str
    elements: list[Element]
    focused: int | None = None
    truncated: bool = False
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_snapshot(cls, raw: dict[str, Any]) -> "PageView":
        elements = []
        for item in raw.get("items", []):
            item = dict(item)
            elements.append(Element(int(item.pop("ref")), str(item.pop("role")), str(item.pop("name") or ""),
                                    int(item.pop("depth", 0)), item))
        return cls(url=str(raw.get("url", "")), title=str(raw.get("title", "")), elements=elements,
                   focused=raw.get("focused"), truncated=bool(raw.get("truncated")))

    def element(self, ref: int) -> Element | None:
        return next((e for e in self.elements if e.ref == ref), None)

    def find_all(self, role: str | None = None, name: str | None = None, contains: str | None = None) -> list[Element]:
        """Elements with this role and exact name (or name containing ``contains``), in page order."""
        return [
            e for e in self.elements
            if (role is None or e.role == role)
            and (name is None or e.name == name)
            and (contains is None or contains in e.name)
        ]

    def find(self, role: str | None = None, name: str | None = None, contains: str | None = None) -> int:
        """The ref of the first matching element; KeyError (listing what exists) when none does."""
        found = self.find_all(role, name, contains)
        if not found:
            raise KeyError(f"no element role={role!r} name={name!r} contains={contains!r} on "
                           f"{self.url}:\n{self.text()}")
        return found[0].ref

    def has_text(self, text: str) -> bool:
        return any(text in e.name for e in self.elements)

    def text(self) -> str:
        """The observation text: URL, title, focus, the last action's error, then one line per element."""
        focused = self.element(self.focused) if self.focused is not None else None
        head = [
            f"URL: {self.url}",
            f"Title: {self.title}",
            f"Focused: {focused.line().strip() if focused else 'none'}",
        ]
        if self.error:
            head.append(f"Last action error: {self.error}")
        head += self.notes
        body = [e.line() for e in self.elements] or ["(the page shows no text or controls)"]
        if self.truncated:
            body.append(f"... (more elements not shown; the list stops at {len(self.elements)})")
        return "\n".join(head + ["Page:"] + body)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
