//! PCRE2 pattern syntax, as mongod compiles it (UTF mode without UCP), rewritten into the
//! `regex` crate's where the two spell the same meaning differently:
//! - `\d`, `\w`, `\s` and their negations are ASCII classes (PCRE2 without UCP), `\b`/`\B`
//!   ASCII word boundaries; the crate's are Unicode-aware;
//! - `\h`, `\H`, `\v`, `\V`, `\R`, `\e` and `\Q...\E` are spelled out, and `\<`, `\>` (word
//!   boundaries to the crate) are the literals they are to PCRE2;
//! - inside a character class, `[` is a literal (unless it opens `[:name:]`), `&&` and `~~`
//!   are literals, and under `x` whitespace is kept, where the crate reads nested classes, set
//!   operations, and ignores the whitespace.
//!
//! Anything else passes through unchanged: syntax the crate lacks (lookaround,
//! backreferences) still fails to compile and is answered as mongod answers an invalid pattern.

/// PCRE2's horizontal whitespace.
const HORIZONTAL: &str = r"\t\x20\xA0\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}";
/// PCRE2's vertical whitespace.
const VERTICAL: &str = r"\n\x0B\x0C\r\x{85}\x{2028}\x{2029}";

/// The pattern in the crate's syntax; `extended` is the `x` option.
pub(super) fn translate(pattern: &str, extended: bool) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(escaped) = chars.next() else {
                    out.push('\\');
                    break;
                };
                if escaped == 'Q' {
                    let mut literal = String::new();
                    while let Some(next) = chars.next() {
                        if next == '\\' && chars.peek() == Some(&'E') {
                            chars.next();
                            break;
                        }
                        literal.push(next);
                    }
                    push_literal(&mut out, &literal, in_class);
                } else {
                    push_escape(&mut out, escaped, in_class);
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                // A `]` first in a class is a literal in PCRE.
                if chars.peek() == Some(&']') {
                    chars.next();
                    out.push_str(r"\]");
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class inside a class: copied whole.
                out.push('[');
                for next in chars.by_ref() {
                    out.push(next);
                    if next == ']' {
                        break;
                    }
                }
            }
            '[' => out.push_str(r"\["),
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' | '-' if in_class && chars.peek() == Some(&c) => {
                chars.next();
                out.push('\\');
                out.push(c);
                out.push('\\');
                out.push(c);
            }
            c if in_class && extended && c.is_whitespace() => {
                out.push_str(&format!(r"\x{{{:X}}}", u32::from(c)));
            }
            '#' if extended && !in_class => {
                // A comment: copied to the end of its line, where no class opens.
                out.push('#');
                for next in chars.by_ref() {
                    out.push(next);
                    if next == '\n' {
                        break;
                    }
                }
            }
            other => out.push(other),
        }
    }
    out
}

fn push_escape(out: &mut String, escaped: char, in_class: bool) {
    let (outside, inside) = match escaped {
        'd' => ("[[:digit:]]", "[:digit:]"),
        'D' => ("[[:^digit:]]", "[:^digit:]"),
        'w' => ("[[:word:]]", "[:word:]"),
        'W' => ("[[:^word:]]", "[:^word:]"),
        's' => ("[[:space:]]", "[:space:]"),
        'S' => ("[[:^space:]]", "[:^space:]"),
        'e' => (r"\x1B", r"\x1B"),
        'b' if !in_class => (r"(?-u:\b)", ""),
        'B' if !in_class => (r"(?-u:\B)", ""),
        'h' | 'H' | 'v' | 'V' => {
            let set = if matches!(escaped, 'h' | 'H') {
                HORIZONTAL
            } else {
                VERTICAL
            };
            let negated = escaped.is_ascii_uppercase();
            match (in_class, negated) {
                (false, false) => out.push_str(&format!("[{set}]")),
                (false, true) => out.push_str(&format!("[^{set}]")),
                // Negated inside a class has no spelling; the crate refuses it as PCRE-only.
                (true, true) => out.push_str(&format!("\\{escaped}")),
                (true, false) => out.push_str(set),
            }
            return;
        }
        'R' if !in_class => (r"(?:\r\n|[\n\x0B\x0C\r\x{85}\x{2028}\x{2029}])", ""),
        // Literals to PCRE2, word boundaries to the crate.
        '<' => ("<", "<"),
        '>' => (">", ">"),
        other => {
            out.push('\\');
            out.push(other);
            return;
        }
    };
    out.push_str(if in_class { inside } else { outside });
}

fn push_literal(out: &mut String, literal: &str, in_class: bool) {
    if in_class {
        for c in literal.chars() {
            if c.is_ascii_punctuation() || c.is_whitespace() {
                out.push_str(&format!(r"\x{{{:X}}}", u32::from(c)));
            } else {
                out.push(c);
            }
        }
    } else {
        // Escaped by code point so that `x` mode keeps its whitespace too.
        for c in literal.chars() {
            if c.is_ascii_alphanumeric() || !c.is_ascii() && !c.is_whitespace() {
                out.push(c);
            } else {
                out.push_str(&format!(r"\x{{{:X}}}", u32::from(c)));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::translate;

    #[test]
    fn escapes_become_ascii_classes() {
        assert_eq!(
            translate(r"^\d+\w\s$", false),
            r"^[[:digit:]]+[[:word:]][[:space:]]$"
        );
        assert_eq!(translate(r"[\d\W]", false), "[[:digit:][:^word:]]");
        assert_eq!(translate(r"\bx\B", false), r"(?-u:\b)x(?-u:\B)");
        assert_eq!(translate(r"a\\d", false), r"a\\d");
        assert_eq!(translate(r"\.\*", false), r"\.\*");
    }

    #[test]
    fn class_literals_stay_literal() {
        assert_eq!(translate("[[]", false), r"[\[]");
        assert_eq!(translate("[]a]", false), r"[\]a]");
        assert_eq!(translate("[^]a]", false), r"[^\]a]");
        assert_eq!(translate("[a&&b]", false), r"[a\&\&b]");
        assert_eq!(translate("[[:alpha:]x]", false), "[[:alpha:]x]");
        assert_eq!(translate("[a b]", true), r"[a\x{20}b]");
        assert_eq!(
            translate("a b # [not a class\nc", true),
            "a b # [not a class\nc"
        );
    }

    #[test]
    fn quoted_text_is_literal() {
        assert_eq!(translate(r"\Qa.b\E+", false), r"a\x{2E}b+");
        assert_eq!(translate(r"\Q(x", false), r"\x{28}x");
    }
}
