//! `$function`: server-side JavaScript, which blackpipe does not run. As a mongod without a
//! JavaScript engine (`--noscripting`), it parses the specification with mongod's checks and
//! fails with 31264 when the expression is evaluated (a pipeline that never evaluates it, over
//! no documents, succeeds on mongod too).

use bson::Bson;

use super::Expr;
use super::vars::{Defined, Scope};
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};

/// Parses `$function`'s argument `{body, args, lang}`; the result is the `args` expression.
pub(super) fn parse_function(argument: &Bson, defined: &Defined) -> StoreResult<Vec<Expr>> {
    let Bson::Document(spec) = argument else {
        return Err(CommandError::new(
            code::FUNCTION_NOT_OBJECT,
            format!(
                "$function requires an object as an argument, found: {}",
                type_name(argument)
            ),
        ));
    };
    let body = spec.get("body").ok_or_else(|| {
        CommandError::new(
            code::FUNCTION_WITHOUT_BODY,
            "The body function must be specified.",
        )
    })?;
    let Expr::Literal(body) = Expr::parse_in(body, defined)? else {
        return Err(CommandError::new(
            code::FUNCTION_BODY_NOT_CONSTANT,
            "The body function must be a constant expression",
        ));
    };
    if !matches!(body, Bson::String(_) | Bson::JavaScriptCode(_)) {
        return Err(CommandError::new(
            code::FUNCTION_BODY_NOT_CODE,
            "The body function must evaluate to type string or code",
        ));
    }
    let args = spec.get("args").ok_or_else(|| {
        CommandError::new(
            code::FUNCTION_WITHOUT_ARGS,
            "The args field must be specified.",
        )
    })?;
    let args = Expr::parse_in(args, defined)?;
    match spec.get("lang") {
        None => Err(CommandError::new(
            code::FUNCTION_WITHOUT_LANG,
            "The lang field must be specified.",
        )),
        Some(Bson::String(lang)) if lang == "js" => Ok(vec![args]),
        Some(_) => Err(CommandError::new(
            code::FUNCTION_LANG_NOT_JS,
            "Currently the only supported language specifier is 'js'.",
        )),
    }
}

/// Evaluating `$function` needs the JavaScript engine blackpipe does not have.
pub(super) fn evaluate_function(_arguments: &[Expr], _scope: &Scope) -> StoreResult<Option<Bson>> {
    Err(javascript_disabled())
}

/// mongod's error when server-side JavaScript runs without a JavaScript engine.
pub(crate) fn javascript_disabled() -> CommandError {
    CommandError::new(
        code::JAVASCRIPT_DISABLED,
        "Cannot run server-side javascript without the javascript engine enabled",
    )
}
