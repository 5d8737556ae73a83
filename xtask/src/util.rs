//! Shared plumbing: where the repository is, which toolchain it pins, and
//! how child `cargo` processes are started with a clean environment.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};

use anyhow::{Context, Result, bail};

/// The repository and the toolchain it pins in `rust-toolchain.toml`.
#[derive(Debug, Clone)]
pub struct Repo {
    pub root: PathBuf,
    pub channel: String,
    pub components: Vec<String>,
    /// `CI=true` in the environment: plain output, no fail-fast.
    pub ci: bool,
}

impl Repo {
    /// Finds the repository root (the directory holding `rust-toolchain.toml`
    /// above `xtask/`) and reads the pinned channel.
    pub fn locate() -> Result<Repo> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        // `cargo run` sets CARGO_MANIFEST_DIR for the program it runs; the
        // compile-time value is the fallback when the binary is run directly.
        if let Some(dir) = env::var_os("CARGO_MANIFEST_DIR") {
            candidates.push(PathBuf::from(dir));
        }
        candidates.push(PathBuf::from(env!("CARGO_MANIFEST_DIR")));
        if let Ok(cwd) = env::current_dir() {
            candidates.extend(cwd.ancestors().map(Path::to_path_buf));
        }
        let root = candidates
            .iter()
            .flat_map(|c| c.ancestors())
            .find(|dir| dir.join("rust-toolchain.toml").is_file() && dir.join("xtask").is_dir())
            .map(Path::to_path_buf)
            .context("cannot find the repository root (a directory with rust-toolchain.toml and xtask/)")?;
        let toolchain_file = root.join("rust-toolchain.toml");
        let text =
            fs::read_to_string(&toolchain_file).with_context(|| format!("reading {}", toolchain_file.display()))?;
        let (channel, components) =
            parse_toolchain_file(&text).with_context(|| format!("parsing {}", toolchain_file.display()))?;
        let ci = env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        Ok(Repo { root, channel, components, ci })
    }

    pub fn target(&self) -> PathBuf {
        self.root.join("target")
    }

    /// Path relative to the repository root, for messages.
    pub fn rel<'a>(&self, path: &'a Path) -> std::borrow::Cow<'a, str> {
        match path.strip_prefix(&self.root) {
            Ok(rel) => rel.to_string_lossy(),
            Err(_) => path.to_string_lossy(),
        }
    }

    /// `cargo +<pinned channel>` with a clean environment, run in the root.
    pub fn cargo(&self) -> Command {
        let mut cmd = Command::new(cargo_proxy());
        cmd.arg(format!("+{}", self.channel));
        self.clean(&mut cmd);
        if self.ci {
            cmd.env("CARGO_TERM_COLOR", "never");
            cmd.env("CARGO_TERM_PROGRESS_WHEN", "never");
        }
        cmd
    }

    /// Removes leaked toolchain/package variables from a child's environment
    /// and sets its working directory to the repository root.
    pub fn clean(&self, cmd: &mut Command) {
        cmd.current_dir(&self.root);
        gpuprim_builder::clean_env(cmd, &[&self.target()]);
    }
}

/// Reads `channel` and `components` from the `[toolchain]` table of a
/// rust-toolchain.toml (a tiny parser: xtask depends only on clap and anyhow).
pub fn parse_toolchain_file(text: &str) -> Result<(String, Vec<String>)> {
    let mut in_toolchain = false;
    let mut channel = None;
    let mut components = Vec::new();
    let mut lines = text.lines();
    while let Some(raw) = lines.next() {
        let line = strip_comment(raw).trim();
        if line.starts_with('[') {
            in_toolchain = line == "[toolchain]";
            continue;
        }
        if !in_toolchain {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        match key.trim() {
            "channel" => channel = quoted_strings(value).into_iter().next(),
            "components" => {
                let mut value = value.to_string();
                while !value.contains(']') {
                    let Some(next) = lines.next() else {
                        bail!("unterminated `components = [` list");
                    };
                    value.push_str(strip_comment(next));
                }
                components = quoted_strings(&value);
            }
            _ => {}
        }
    }
    let channel = channel.context("no `channel = \"...\"` in the [toolchain] table")?;
    Ok((channel, components))
}

fn strip_comment(line: &str) -> &str {
    // Good enough for rust-toolchain.toml: no '#' inside its strings.
    line.split('#').next().unwrap_or("")
}

fn quoted_strings(s: &str) -> Vec<String> {
    s.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

/// `$CARGO_HOME`, or `~/.cargo` where it is unset.
pub fn cargo_home() -> Option<PathBuf> {
    env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// The rustup `cargo` proxy, which understands `+toolchain`. Prefer the one
/// in `$CARGO_HOME/bin`, since under `cargo +stable` PATH may also reach a
/// toolchain's own cargo.
fn cargo_proxy() -> OsString {
    if let Some(home) = cargo_home() {
        let proxy = home.join("bin").join("cargo");
        if proxy.is_file() {
            return proxy.into_os_string();
        }
    }
    OsString::from("cargo")
}

/// Finds an executable by name on PATH (and in `$CARGO_HOME/bin`, where cargo
/// looks for subcommands).
pub fn which(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = env::var_os("PATH").map(|p| env::split_paths(&p).collect()).unwrap_or_default();
    if let Some(home) = cargo_home() {
        dirs.push(home.join("bin"));
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A shell-like rendering of a command, for the log.
pub fn display(cmd: &Command) -> String {
    let mut parts = vec![quote(&cmd.get_program().to_string_lossy())];
    if let Some(home) = cargo_home()
        && Path::new(cmd.get_program()) == home.join("bin").join("cargo")
    {
        parts[0] = "cargo".into();
    }
    parts.extend(cmd.get_args().map(|a| quote(&a.to_string_lossy())));
    parts.join(" ")
}

fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./+=:,@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Runs a command with inherited stdio; returns its exit status.
pub fn status(cmd: &mut Command) -> Result<ExitStatus> {
    println!("$ {}", display(cmd));
    cmd.status().with_context(|| format!("failed to start `{}`", display(cmd)))
}

/// Runs a command with inherited stdio; fails unless it succeeds.
pub fn run(cmd: &mut Command) -> Result<()> {
    let st = status(cmd)?;
    if !st.success() {
        bail!("`{}` failed ({st})", display(cmd));
    }
    Ok(())
}

/// Runs a command capturing stdout (stderr passes through); fails unless it
/// succeeds.
pub fn stdout_of(cmd: &mut Command) -> Result<String> {
    println!("$ {}", display(cmd));
    let out = cmd.stderr(Stdio::inherit()).output().with_context(|| format!("failed to start `{}`", display(cmd)))?;
    if !out.status.success() {
        bail!("`{}` failed ({})", display(cmd), out.status);
    }
    String::from_utf8(out.stdout).with_context(|| format!("`{}`: output not UTF-8", display(cmd)))
}

/// Runs a command quietly, capturing both streams (for probes).
pub fn capture(cmd: &mut Command) -> Result<Output> {
    cmd.stdin(Stdio::null()).output().with_context(|| format!("failed to start `{}`", display(cmd)))
}

/// Finds `"key":"value"` in one line of JSON and returns the decoded value.
/// Enough for cargo's message and metadata JSON, which xtask reads without a
/// JSON library.
pub fn json_str(json: &str, key: &str) -> Option<String> {
    let pat = format!("\"{key}\":\"");
    let start = json.find(&pat)? + pat.len();
    json_decode_at(&json[start..]).map(|(s, _)| s)
}

/// Decodes a JSON string body starting just after its opening quote; returns
/// the string and the number of bytes consumed including the closing quote.
fn json_decode_at(s: &str) -> Option<(String, usize)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, i + 1)),
            '\\' => {
                let (_, e) = chars.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'u' => {
                        let hex: String = (0..4).filter_map(|_| chars.next().map(|(_, h)| h)).collect();
                        let code = u32::from_str_radix(&hex, 16).ok()?;
                        out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// Seconds with one decimal, for step timings.
pub fn secs(d: std::time::Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_pinned_toolchain_file() {
        let text = "# pinned\n[toolchain]\nchannel = \"nightly-2026-05-20\"\ncomponents = [\"rust-src\",\n  \"rustfmt\", \"clippy\"]\nprofile = \"minimal\"\n";
        let (ch, comps) = parse_toolchain_file(text).expect("parses");
        assert_eq!(ch, "nightly-2026-05-20");
        assert_eq!(comps, ["rust-src", "rustfmt", "clippy"]);
    }

    #[test]
    fn decodes_json_strings_with_escapes() {
        let line = r#"{"reason":"compiler-artifact","executable":"/a/b \"c\"\\d","x":null}"#;
        assert_eq!(json_str(line, "executable").as_deref(), Some(r#"/a/b "c"\d"#));
        assert_eq!(json_str(line, "missing"), None);
    }
}
