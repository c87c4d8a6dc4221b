//! `$accumulator`: a JavaScript accumulator, which blackpipe cannot run. As a mongod without a
//! JavaScript engine, the specification is parsed with mongod's checks and the accumulator
//! fails with 31264 when its first group starts (over no documents, the `$group` succeeds).

use bson::Bson;

use super::accumulator::{Accumulator, Kind, constant_of};
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::expr::{Defined, Expr};

/// Parses `{init, accumulate, merge, finalize?, initArgs?, accumulateArgs, lang}`.
pub(super) fn parse(argument: &Bson, defined: &Defined) -> StoreResult<Accumulator> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::new(
            code::ACCUMULATOR_JS_NOT_OBJECT,
            format!(
                "$accumulator expects an object as an argument; found: {}",
                type_name(argument)
            ),
        ));
    };
    let (mut init, mut accumulate, mut merge, mut args) = (false, false, false, None);
    for (name, value) in spec {
        match name.as_str() {
            "init" => init = function(name, value, defined)?,
            "accumulate" => accumulate = function(name, value, defined)?,
            "merge" => merge = function(name, value, defined)?,
            "finalize" => {
                function(name, value, defined)?;
            }
            "initArgs" => {
                Expr::parse_in(value, defined)?;
            }
            "accumulateArgs" => args = Some(Expr::parse_in(value, defined)?),
            "lang" => match value {
                Bson::String(lang) if lang == "js" => {}
                Bson::String(_) => {
                    return Err(CommandError::new(
                        code::ACCUMULATOR_JS_LANG_NOT_JS,
                        "$accumulator only supports lang: 'js'",
                    ));
                }
                other => {
                    return Err(CommandError::new(
                        code::ACCUMULATOR_JS_LANG_NOT_STRING,
                        format!(
                            "$accumulator lang must be a string; found: {}",
                            type_name(other)
                        ),
                    ));
                }
            },
            _ => {
                return Err(CommandError::new(
                    code::ACCUMULATOR_JS_UNKNOWN_FIELD,
                    format!("$accumulator got an unexpected field: {name}"),
                ));
            }
        }
    }
    let require = |present: bool, code: i32, field: &str| {
        if present {
            Ok(())
        } else {
            Err(CommandError::new(
                code,
                format!("$accumulator missing required argument '{field}'"),
            ))
        }
    };
    require(init, code::ACCUMULATOR_JS_WITHOUT_INIT, "init")?;
    require(
        accumulate,
        code::ACCUMULATOR_JS_WITHOUT_ACCUMULATE,
        "accumulate",
    )?;
    require(merge, code::ACCUMULATOR_JS_WITHOUT_MERGE, "merge")?;
    let args = args.ok_or_else(|| {
        CommandError::new(
            code::ACCUMULATOR_JS_WITHOUT_ARGS,
            "$accumulator missing required argument 'accumulateArgs'",
        )
    })?;
    Ok(Accumulator::simple(Kind::JavaScript, args))
}

/// A function field: a constant string or code; `true` when it is not empty (mongod treats an
/// empty function as a missing one).
fn function(name: &str, value: &Bson, defined: &Defined) -> StoreResult<bool> {
    let Some(constant) = constant_of(&Expr::parse_in(value, defined)?) else {
        return Err(CommandError::new(
            code::ACCUMULATOR_JS_NOT_CONSTANT,
            format!("$accumulator '{name}' must be a constant expression"),
        ));
    };
    match constant {
        Bson::String(source) | Bson::JavaScriptCode(source) => Ok(!source.is_empty()),
        _ => Err(CommandError::new(
            code::ACCUMULATOR_JS_NOT_CODE,
            format!("$accumulator '{name}' must be a String or Code"),
        )),
    }
}
