//! Figures drawn elsewhere (a sweep's plots, compare's bar charts: plotters' SVG) put in
//! the page safe by construction: the SVG is read as XML (roxmltree) and written out
//! again here, so
//! what reaches the page is only what this module writes. It writes drawing elements
//! ([`ELEMENTS`]) with drawing attributes ([`ATTRIBUTES`]), and every text and attribute
//! value decoded from the figure and escaped again by the page's `esc` (control
//! characters as U+FFFD). Text is never looked into: a target named `ahrefs-prod`, or
//! `<a href="javascript:x">`, is text and is shown as text. A paint (`fill`, `stroke`) is
//! a colour or `none`, never a reference. What cannot be written this way (another
//! element, an event handler or any other attribute, markup that is not well formed) is
//! an [`Error::BadFigure`] naming what and where; comments, processing instructions and
//! the XML declaration are dropped, and a DTD is refused.

use crate::Error;
use crate::escape::esc;

/// SVG's namespace: the one a figure's elements may be in (or none).
const SVG_NAMESPACE: &str = "http://www.w3.org/2000/svg";

/// The elements a figure may hold: shapes, text and grouping; nothing that links, loads,
/// runs or styles.
pub(crate) const ELEMENTS: [&str; 13] = [
    "svg", "g", "rect", "line", "polyline", "polygon", "path", "circle", "ellipse", "text",
    "tspan", "title", "desc",
];

/// The attributes an element may carry: geometry, stroke and text presentation, and the
/// SVG namespace. `fill` and `stroke` are [`paint`]s.
pub(crate) const ATTRIBUTES: [&str; 37] = [
    "xmlns",
    "version",
    "width",
    "height",
    "viewBox",
    "preserveAspectRatio",
    "x",
    "y",
    "x1",
    "y1",
    "x2",
    "y2",
    "cx",
    "cy",
    "r",
    "rx",
    "ry",
    "dx",
    "dy",
    "points",
    "d",
    "transform",
    "fill",
    "stroke",
    "stroke-width",
    "stroke-dasharray",
    "stroke-linecap",
    "stroke-linejoin",
    "opacity",
    "fill-opacity",
    "stroke-opacity",
    "font-family",
    "font-size",
    "font-weight",
    "font-style",
    "text-anchor",
    "dominant-baseline",
];

/// Whether `v` is a paint that refers to nothing: `none`, a colour keyword, `#` and 3, 4,
/// 6 or 8 hex digits, or `rgb(...)`/`rgba(...)` of numbers.
fn paint(v: &str) -> bool {
    let v = v.trim();
    if let Some(hex) = v.strip_prefix('#') {
        return [3, 4, 6, 8].contains(&hex.len()) && hex.chars().all(|c| c.is_ascii_hexdigit());
    }
    if let Some(args) = v
        .strip_prefix("rgba(")
        .or_else(|| v.strip_prefix("rgb("))
        .and_then(|a| a.strip_suffix(')'))
    {
        return args
            .chars()
            .all(|c| c.is_ascii_digit() || " ,.%".contains(c));
    }
    !v.is_empty() && v.len() <= 32 && v.chars().all(|c| c.is_ascii_alphabetic())
}

/// The figure's `<svg>` element as the page holds it: read by roxmltree, checked and
/// written again (see the module's doc). `title` names the figure in an error.
pub(crate) fn clean(title: &str, svg: &str) -> Result<String, Error> {
    let bad = |why: String| Error::BadFigure {
        title: title.to_string(),
        why,
    };
    // roxmltree refuses a DTD (and so every entity but XML's own) by default.
    let doc = roxmltree::Document::parse(svg).map_err(|e| bad(format!("not XML: {e}")))?;
    let root = doc.root_element();
    if root.tag_name().name() != "svg" {
        return Err(bad(format!(
            "the root element is <{}>, not <svg>",
            root.tag_name().name().escape_debug()
        )));
    }
    let mut out = String::with_capacity(svg.len());
    write_element(root, &mut out, &bad)?;
    Ok(out)
}

/// Writes `node` (an element) and what it holds, refusing what [`ELEMENTS`] and
/// [`ATTRIBUTES`] do not allow.
fn write_element(
    node: roxmltree::Node<'_, '_>,
    out: &mut String,
    bad: &dyn Fn(String) -> Error,
) -> Result<(), Error> {
    let name = node.tag_name().name();
    let at = node.document().text_pos_at(node.range().start);
    let Some(&name) = ELEMENTS.iter().find(|e| **e == name) else {
        return Err(bad(format!(
            "an element <{}> (line {}, column {}); allowed: {}",
            name.escape_debug(),
            at.row,
            at.col,
            ELEMENTS.join(", ")
        )));
    };
    if node
        .tag_name()
        .namespace()
        .is_some_and(|ns| ns != SVG_NAMESPACE)
    {
        return Err(bad(format!(
            "<{name}> (line {}) is in another namespace than SVG's",
            at.row
        )));
    }
    out.push('<');
    out.push_str(name);
    for attr in node.attributes() {
        let attr_name = attr.name();
        if attr.namespace().is_some() || !ATTRIBUTES.contains(&attr_name) || attr_name == "xmlns" {
            return Err(bad(format!(
                "<{name} {}> (line {}): the attribute {}; allowed: {}",
                attr_name.escape_debug(),
                at.row,
                attr_name.escape_debug(),
                ATTRIBUTES.join(", ")
            )));
        }
        let value = attr.value();
        if (attr_name == "fill" || attr_name == "stroke") && !paint(value) {
            return Err(bad(format!(
                "<{name} {attr_name}={value:?}> (line {}): a paint is `none`, a colour name, \
                 #hex, or rgb(...) of numbers",
                at.row
            )));
        }
        out.push(' ');
        out.push_str(attr_name);
        out.push_str("=\"");
        out.push_str(&esc(value));
        out.push('"');
    }
    if node.parent_element().is_none() {
        out.push_str(" xmlns=\"");
        out.push_str(SVG_NAMESPACE);
        out.push('"');
    }
    let mut children = node.children().peekable();
    if children.peek().is_none() {
        out.push_str("/>");
        return Ok(());
    }
    out.push('>');
    for child in children {
        match child.node_type() {
            roxmltree::NodeType::Element => write_element(child, out, bad)?,
            // Text and CDATA alike: decoded by the reader, escaped again here.
            roxmltree::NodeType::Text => out.push_str(&esc(child.text().unwrap_or_default())),
            // Comments and processing instructions are dropped.
            _ => {}
        }
    }
    out.push_str("</");
    out.push_str(name);
    out.push('>');
    Ok(())
}
