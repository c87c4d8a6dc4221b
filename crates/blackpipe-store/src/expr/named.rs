//! Operators whose arguments are named and need more than a list of expressions: the variable
//! binders (`$let`, `$map`, `$filter`, `$reduce`) and `$switch`, `$zip`, `$sortArray`,
//! `$firstN`/`$lastN`/`$minN`/`$maxN`.

use bson::Bson;

use super::Operator;
use super::arrays::Zip;
use super::control::Switch;
use super::iterate::Iterate;
use super::pick::{Pick, PickN, SortArray};
use super::vars::{Defined, Let, Scope};
use crate::errors::StoreResult;

/// A parsed named-argument operator.
#[derive(Debug, Clone)]
pub(crate) enum Named {
    Let(Let),
    Iterate(Iterate),
    Switch(Switch),
    Zip(Zip),
    SortArray(SortArray),
    PickN(PickN),
}

impl Named {
    /// Parses `operator`'s argument when it is one of these; `None` otherwise.
    pub(super) fn parse(
        operator: Operator,
        argument: &Bson,
        defined: &Defined,
    ) -> StoreResult<Option<Named>> {
        let named = match operator {
            Operator::Let => Named::Let(Let::parse(argument, defined)?),
            Operator::Map => Named::Iterate(Iterate::parse_map(argument, defined)?),
            Operator::Filter => Named::Iterate(Iterate::parse_filter(argument, defined)?),
            Operator::Reduce => Named::Iterate(Iterate::parse_reduce(argument, defined)?),
            Operator::Switch => Named::Switch(Switch::parse(argument, defined)?),
            Operator::Zip => Named::Zip(Zip::parse(argument, defined)?),
            Operator::SortArray => Named::SortArray(SortArray::parse(argument, defined)?),
            Operator::FirstN => Named::PickN(PickN::parse(Pick::First, argument, defined)?),
            Operator::LastN => Named::PickN(PickN::parse(Pick::Last, argument, defined)?),
            Operator::MinN => Named::PickN(PickN::parse(Pick::Min, argument, defined)?),
            Operator::MaxN => Named::PickN(PickN::parse(Pick::Max, argument, defined)?),
            _ => return Ok(None),
        };
        Ok(Some(named))
    }

    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        match self {
            Named::Let(call) => call.evaluate(scope),
            Named::Iterate(call) => call.evaluate(scope),
            Named::Switch(call) => call.evaluate(scope),
            Named::Zip(call) => call.evaluate(scope),
            Named::SortArray(call) => call.evaluate(scope),
            Named::PickN(call) => call.evaluate(scope),
        }
    }
}
