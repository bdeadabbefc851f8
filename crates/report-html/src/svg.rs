//! Figures drawn elsewhere (a sweep's plots, compare's bar charts: plotters' SVG) put in
//! the page safe by construction: the SVG is read as XML and written out again here, so
//! what reaches the page is only what this module writes. It writes drawing elements
//! ([`ELEMENTS`]) with drawing attributes ([`ATTRIBUTES`]), and every text and attribute
//! value decoded from the figure and escaped again by the page's `esc` (control
//! characters as U+FFFD). Text is never looked into: a target named `ahrefs-prod`, or
//! `<a href="javascript:x">`, is text and is shown as text. A paint (`fill`, `stroke`) is
//! a colour or `none`, never a reference. What cannot be written this way (another
//! element, an event handler or any other attribute, markup that is not well formed) is
//! an [`Error::BadFigure`] naming what and where; comments, processing instructions and
//! whatever comes before the `<svg>` element (an XML prolog) are dropped.

use crate::Error;
use crate::page::esc;

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

/// Whether `c` may be in an element's or an attribute's name.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_:.-".contains(c)
}

/// Text or an attribute value with XML's references decoded: the five named ones and
/// numeric ones; an `&` that starts none is kept as it is.
fn decode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').filter(|e| *e <= 12);
        let decoded = end.and_then(|e| {
            let name = &rest[1..e];
            let c = match name {
                "lt" => '<',
                "gt" => '>',
                "amp" => '&',
                "quot" => '"',
                "apos" => '\'',
                _ => {
                    let n = if let Some(hex) = name.strip_prefix("#x") {
                        u32::from_str_radix(hex, 16).ok()?
                    } else {
                        name.strip_prefix('#')?.parse().ok()?
                    };
                    char::from_u32(n).unwrap_or('\u{fffd}')
                }
            };
            Some((c, e + 1))
        });
        match decoded {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The figure's `<svg>` element as the page holds it: read, checked and written again
/// (see the module's doc). `title` names the figure in an error.
pub(crate) fn clean(title: &str, svg: &str) -> Result<String, Error> {
    let bad = |why: String| Error::BadFigure {
        title: title.to_string(),
        why,
    };
    let start = svg
        .find("<svg")
        .ok_or_else(|| bad("no <svg> element".into()))?;
    let src = &svg[start..];
    let mut out = String::with_capacity(src.len());
    let mut open: Vec<&str> = Vec::new();
    let mut at = 0;
    let mut closed = false;
    while at < src.len() {
        let rest = &src[at..];
        let byte = start + at;
        if closed {
            // After the root element: nothing but white space.
            if !rest.trim().is_empty() {
                return Err(bad(format!(
                    "something after the </svg> that ends it (byte {byte})"
                )));
            }
            break;
        }
        if !rest.starts_with('<') {
            let end = rest.find('<').unwrap_or(rest.len());
            out.push_str(&esc(&decode(&rest[..end])));
            at += end;
            continue;
        }
        let skip_to = |end: &str, what: &str| {
            rest.find(end)
                .map(|e| e + end.len())
                .ok_or_else(|| bad(format!("{what} not closed (byte {byte})")))
        };
        if rest.starts_with("<!--") {
            at += skip_to("-->", "a comment")?;
            continue;
        }
        if let Some(cdata) = rest.strip_prefix("<![CDATA[") {
            let end = cdata
                .find("]]>")
                .ok_or_else(|| bad(format!("a CDATA section not closed (byte {byte})")))?;
            out.push_str(&esc(&cdata[..end]));
            at += "<![CDATA[".len() + end + "]]>".len();
            continue;
        }
        if rest.starts_with("<?") {
            at += skip_to("?>", "a processing instruction")?;
            continue;
        }
        if rest.starts_with("<!") {
            return Err(bad(format!(
                "a <! declaration inside the figure (byte {byte}); allowed: elements, text, \
                 comments"
            )));
        }
        if let Some(close) = rest.strip_prefix("</") {
            let end = close
                .find('>')
                .ok_or_else(|| bad(format!("a closing tag not closed (byte {byte})")))?;
            let name = close[..end].trim();
            match open.pop() {
                Some(top) if top == name => {}
                top => {
                    return Err(bad(format!(
                        "</{name}> (byte {byte}) closes {}",
                        top.map_or("nothing".to_string(), |t| format!("<{t}>"))
                    )));
                }
            }
            out.push_str("</");
            out.push_str(name);
            out.push('>');
            at += 2 + end + 1;
            closed = open.is_empty();
            continue;
        }
        // A start tag.
        let tag = &rest[1..];
        let name_len = tag.find(|c: char| !name_char(c)).unwrap_or(tag.len());
        let name = &tag[..name_len];
        let Some(&name) = ELEMENTS.iter().find(|e| **e == name) else {
            return Err(bad(format!(
                "an element <{}> (byte {byte}); allowed: {}",
                name.escape_debug(),
                ELEMENTS.join(", ")
            )));
        };
        out.push('<');
        out.push_str(name);
        let mut p = 1 + name_len;
        let self_closing = loop {
            let attrs = &rest[p..];
            let trimmed = attrs.trim_start();
            p += attrs.len() - trimmed.len();
            if trimmed.starts_with("/>") {
                p += 2;
                break true;
            }
            if trimmed.starts_with('>') {
                p += 1;
                break false;
            }
            let attr_len = trimmed
                .find(|c: char| !name_char(c))
                .unwrap_or(trimmed.len());
            let attr = &trimmed[..attr_len];
            if attr.is_empty() {
                return Err(bad(format!(
                    "<{name}> (byte {byte}): not a well-formed tag at byte {}",
                    start + at + p
                )));
            }
            if !ATTRIBUTES.contains(&attr) {
                return Err(bad(format!(
                    "<{name} {}> (byte {byte}): the attribute {}; allowed: {}",
                    attr.escape_debug(),
                    attr.escape_debug(),
                    ATTRIBUTES.join(", ")
                )));
            }
            let after = trimmed[attr_len..].trim_start();
            let Some(after_eq) = after.strip_prefix('=') else {
                return Err(bad(format!(
                    "<{name}> (byte {byte}): the attribute {attr} without a value"
                )));
            };
            let value_at = after_eq.trim_start();
            let quote = value_at.chars().next().filter(|q| *q == '"' || *q == '\'');
            let Some(quote) = quote else {
                return Err(bad(format!(
                    "<{name}> (byte {byte}): the attribute {attr}'s value is not quoted"
                )));
            };
            let Some(len) = value_at[1..].find(quote) else {
                return Err(bad(format!(
                    "<{name}> (byte {byte}): the attribute {attr}'s value is not closed"
                )));
            };
            let value = decode(&value_at[1..1 + len]);
            if (attr == "fill" || attr == "stroke") && !paint(&value) {
                return Err(bad(format!(
                    "<{name} {attr}={:?}> (byte {byte}): a paint is `none`, a colour name, \
                     #hex, or rgb(...) of numbers",
                    value
                )));
            }
            out.push(' ');
            out.push_str(attr);
            out.push_str("=\"");
            out.push_str(&esc(&value));
            out.push('"');
            // Past the value and its closing quote.
            p = src.len() - at - (value_at.len() - 1 - len - 1);
        };
        if self_closing {
            out.push_str("/>");
            closed = open.is_empty();
        } else {
            out.push('>');
            open.push(name);
        }
        at += p;
    }
    if let Some(top) = open.last() {
        return Err(bad(format!(
            "<{top}> is not closed: the figure ends inside it"
        )));
    }
    Ok(out)
}
