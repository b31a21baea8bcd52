//! PTX modules split into their kernel entries, with comments blanked out so that braces and
//! parentheses inside comments cannot throw the split off.

use crate::Error;

/// A PTX parameter's type, by what the driver copies: integers and untyped bits by size, floats
/// as floats, anything else (byte arrays, structs by value) by its spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    /// `.u32`, `.s32`, `.b32`.
    Int32,
    /// `.u64`, `.s64`, `.b64` (pointers included).
    Int64,
    F32,
    F64,
    Other(String),
}

impl ParamType {
    /// Classifies the declaration that follows `.param` (e.g. `.u64 .ptr .align 1 name`).
    pub fn parse(decl: &str) -> ParamType {
        let mut tokens = decl.split_whitespace().peekable();
        // `.param .align N .b8 name[M]` puts the alignment before the type.
        let mut align = String::new();
        if tokens.peek() == Some(&".align") {
            tokens.next();
            align = format!(".align {} ", tokens.next().unwrap_or(""));
        }
        let ty = tokens.next().unwrap_or("");
        match ty {
            ".u32" | ".s32" | ".b32" => ParamType::Int32,
            ".u64" | ".s64" | ".b64" => ParamType::Int64,
            ".f32" => ParamType::F32,
            ".f64" => ParamType::F64,
            _ => {
                let array = tokens
                    .last()
                    .and_then(|name| name.find('[').map(|i| name[i..].to_string()))
                    .unwrap_or_default();
                ParamType::Other(format!("{align}{ty}{array}"))
            }
        }
    }
}

/// One `.entry` of a PTX module. Its slices point into the module text as written.
#[derive(Debug, Clone)]
pub struct Entry<'a> {
    pub name: &'a str,
    /// Each parameter's declaration after `.param`, comments left out.
    pub params: Vec<String>,
    /// The entry from its `.entry` line through its closing brace, comments included.
    pub body: &'a str,
    /// [`Entry::body`] with every comment blanked out (same length, same line breaks).
    pub code: String,
}

impl Entry<'_> {
    pub fn param_types(&self) -> Vec<ParamType> {
        self.params.iter().map(|p| ParamType::parse(p)).collect()
    }

    /// Each parameter's symbol: the last word of its declaration, without an array suffix.
    pub fn param_names(&self) -> Vec<&str> {
        self.params
            .iter()
            .map(|p| {
                let last = p.split_whitespace().last().unwrap_or("");
                last.split('[').next().unwrap_or(last)
            })
            .collect()
    }
}

/// A parsed PTX module: its SM target and its kernels in module order.
#[derive(Debug, Clone)]
pub struct Module<'a> {
    /// The first operand of `.target`, e.g. `sm_90`.
    pub target: &'a str,
    pub entries: Vec<Entry<'a>>,
    /// Everything outside the entries (header, globals, `.func`s), comments blanked out.
    pub scope: String,
}

/// `text` with every `//` and `/* */` comment replaced by spaces, line breaks kept, so that byte
/// offsets and line numbers in the result are those of `text`.
pub fn blank_comments(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i..].starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            let end = text[i + 2..]
                .find("*/")
                .map(|e| i + 2 + e + 2)
                .unwrap_or(bytes.len());
            out.extend(
                bytes[i..end]
                    .iter()
                    .map(|&b| if b == b'\n' { b'\n' } else { b' ' }),
            );
            i = end;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // Every byte inside a comment became an ASCII space and every other byte was copied, so
    // multi-byte characters outside comments stay whole and the result is UTF-8.
    String::from_utf8(out).expect("blanking comments keeps UTF-8 valid")
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Splits `ptx` into its `.entry` kernels. Fails, naming the line, on a module without
/// `.version` or `.target`, an entry without a parameter list or closing brace, or a module
/// that declares no entry at all.
pub fn parse(ptx: &str) -> Result<Module<'_>, Error> {
    let code = blank_comments(ptx);
    let directive = |name: &str| {
        code.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(name).filter(|r| r.starts_with([' ', '\t'])))
    };
    if directive(".version").is_none() {
        return Err(Error::new("not a PTX module: no `.version` directive"));
    }
    let target_start = code
        .lines()
        .map(str::trim_start)
        .find(|l| l.starts_with(".target ") || l.starts_with(".target\t"))
        .map(|l| l.as_ptr() as usize - code.as_ptr() as usize + ".target".len())
        .ok_or_else(|| Error::new("not a PTX module: no `.target` directive"))?;
    let target = ptx[target_start..]
        .split(|c: char| c == ',' || c.is_whitespace())
        .find(|t| !t.is_empty())
        .unwrap_or("");

    let mut entries = Vec::new();
    let mut scope = String::new();
    let mut pos = 0;
    while let Some(found) = find_entry(&code, pos) {
        scope.push_str(&code[pos..found.start]);
        let line = line_of(ptx, found.start);
        let after = &code[found.name_start..];
        let open = after.find('(').ok_or_else(|| {
            Error::new(format!("line {line}: an .entry without a parameter list"))
        })?;
        let name = ptx[found.name_start..found.name_start + open].trim();
        let at = |what: &str| Error::new(format!("line {line}: entry `{name}`: {what}"));
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(at("not a kernel name"));
        }
        let close = after[open..]
            .find(')')
            .ok_or_else(|| at("unterminated parameter list"))?
            + open;
        let params = code[found.name_start + open + 1..found.name_start + close]
            .split(',')
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|p| !p.is_empty())
            .map(|p| {
                p.strip_prefix(".param ")
                    .map(str::to_string)
                    .ok_or_else(|| at(&format!("`{p}` is not a .param")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let body_start = found.name_start + close + 1;
        let brace = code[body_start..]
            .find(['{', ';'])
            .filter(|&i| code.as_bytes()[body_start + i] == b'{')
            .ok_or_else(|| at("no body (`{` after the parameter list)"))?
            + body_start;
        let mut depth = 0usize;
        let mut end = None;
        for (i, b) in code.bytes().enumerate().skip(brace) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let end = end.ok_or_else(|| at("no closing brace before the end of the module"))?;
        entries.push(Entry {
            name,
            params,
            body: &ptx[found.start..end],
            code: code[found.start..end].to_string(),
        });
        pos = end;
    }
    scope.push_str(&code[pos..]);
    if entries.is_empty() {
        return Err(Error::new("the module declares no kernel (`.entry`)"));
    }
    Ok(Module {
        target,
        entries,
        scope,
    })
}

struct FoundEntry {
    /// Where the line holding `.entry` starts its first word (`.visible`, `.weak` or `.entry`).
    start: usize,
    /// Just after `.entry `.
    name_start: usize,
}

/// The next line at or after `from` whose first words are `[.visible|.weak|.extern] .entry`.
fn find_entry(code: &str, from: usize) -> Option<FoundEntry> {
    let mut offset = from;
    for line in code[from..].split_inclusive('\n') {
        let indent = line.len() - line.trim_start().len();
        let mut words = line.split_whitespace();
        let mut first = words.next();
        if matches!(first, Some(".visible" | ".weak" | ".extern")) {
            first = words.next();
        }
        if first == Some(".entry") {
            let rel = line.find(".entry").unwrap() + ".entry".len();
            return Some(FoundEntry {
                start: offset + indent,
                name_start: offset + rel,
            });
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

    #[test]
    fn entries_end_at_their_closing_brace_and_ignore_braces_in_comments() {
        let ptx = format!(
            "{HEAD}.visible .entry a(\n\t.param .u64 a_param_0 // ) {{\n)\n.maxntid 256, 1, 1\n{{\n\t\
             {{ .reg .u64 g; mov.u64 g, 0; }}\n\tret; /* }} */\n}}\n.func f()\n{{\n\tret;\n}}\n\
             .entry b()\n{{\n\tret;\n}}\n"
        );
        let m = parse(&ptx).unwrap();
        assert_eq!(m.target, "sm_90");
        let names: Vec<&str> = m.entries.iter().map(|e| e.name).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(m.entries[0].body.ends_with("/* } */\n}"));
        assert_eq!(m.entries[0].param_names(), ["a_param_0"]);
        assert!(m.scope.contains(".func f()"));
        assert!(!m.scope.contains("ret; /*"));
    }

    #[test]
    fn malformed_modules_are_refused_with_the_line() {
        let err = |ptx: &str| parse(ptx).unwrap_err().to_string();
        assert!(err("hello").contains("no `.version`"));
        assert!(err(".version 8.0\n").contains("no `.target`"));
        assert!(err(HEAD).contains("declares no kernel"));
        let open = format!("{HEAD}.visible .entry k(\n.param .u32 x\n");
        assert_eq!(err(&open), "line 4: entry `k`: unterminated parameter list");
        let unclosed = format!("{HEAD}.visible .entry k()\n{{\n\tret;\n");
        assert_eq!(
            err(&unclosed),
            "line 4: entry `k`: no closing brace before the end of the module"
        );
        let bad_param = format!("{HEAD}.entry k(.reg .u32 x)\n{{\n}}\n");
        assert!(err(&bad_param).contains("is not a .param"));
    }

    #[test]
    fn parameter_types_by_what_the_driver_copies() {
        let rust = ".u64 .ptr .align 1 k_param_0";
        let nvrtc = ".u64 k_param_0";
        assert_eq!(ParamType::parse(rust), ParamType::parse(nvrtc));
        assert_eq!(ParamType::parse(".s32 n"), ParamType::Int32);
        assert_eq!(
            ParamType::parse(".align 8 .b8 k_param_2[16]"),
            ParamType::Other(".align 8 .b8[16]".into())
        );
    }
}
