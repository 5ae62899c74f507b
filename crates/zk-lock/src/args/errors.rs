//! Clap's errors rewritten as zk-lock's own one-line messages (or as the help
//! and version requests they stand for).

use clap::error::{ContextKind, ContextValue, ErrorKind};

use super::cli::subcommand_help;
use super::options::{Parsed, UsageError};

/// The flag's name as the user knows it: `--timeout` from `--timeout <D>`,
/// `-w` from `-w <D>`.
fn flag_name(arg: &str) -> String {
    arg.split([' ', '=']).next().unwrap_or(arg).to_string()
}

fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        other => Some(other.to_string()),
    }
}

/// Turns clap's error into zk-lock's message (or the help / version request).
pub(super) fn from_clap(e: clap::Error, subcommand: Option<&str>) -> Result<Parsed, UsageError> {
    let arg = context(&e, ContextKind::InvalidArg).unwrap_or_default();
    let name = flag_name(&arg);
    let msg = match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            return Ok(match subcommand {
                Some(name) => Parsed::SubcommandHelp(subcommand_help(name)),
                None => Parsed::Help,
            })
        }
        ErrorKind::DisplayVersion => return Ok(Parsed::Version),
        ErrorKind::UnknownArgument => format!("unknown option {arg:?} (see zk-lock --help)"),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation => {
            let value = context(&e, ContextKind::InvalidValue).unwrap_or_default();
            match std::error::Error::source(&e) {
                Some(source) => format!("{name}: {source}"),
                None if value.is_empty() => format!("{name} needs a value"),
                None => format!("{name}: invalid value {value:?}"),
            }
        }
        ErrorKind::ArgumentConflict if context(&e, ContextKind::PriorArg).is_some_and(|p| p != arg) => {
            let prior = flag_name(&context(&e, ContextKind::PriorArg).unwrap_or_default());
            format!("{name} and {prior} cannot be combined")
        }
        ErrorKind::TooManyValues | ErrorKind::ArgumentConflict if arg.starts_with('-') => {
            format!("{name} takes no value")
        }
        ErrorKind::NoEquals | ErrorKind::TooFewValues | ErrorKind::WrongNumberOfValues => {
            format!("{name} needs a value")
        }
        ErrorKind::MissingRequiredArgument => match subcommand {
            Some(sub) => format!("missing PATH: zk-lock {sub} PATH"),
            None => "missing arguments".to_string(),
        },
        ErrorKind::InvalidUtf8 => "an argument is not valid UTF-8 (only COMMAND, after `--`, may be)".to_string(),
        _ => {
            // Clap's own wording, first line only, without its "error: " prefix.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("invalid arguments");
            line.strip_prefix("error: ").unwrap_or(line).to_string()
        }
    };
    Err(UsageError(msg))
}
