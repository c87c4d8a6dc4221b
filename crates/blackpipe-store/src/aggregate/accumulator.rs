//! Accumulators: parsed once, they make a fresh [`State`] per group (or per window frame) and
//! turn each document into the [`Item`] the state adds. `$group` and `$setWindowFields` share
//! them: a window function over a frame is an accumulator over the frame's documents.

use std::sync::Arc;

use bson::{Bson, Document};

use super::acc_n::{MinMaxN, TopBottom, TopSort};
use super::acc_percentile::Quantiles;
use super::acc_state::{State, Summation};
use super::window_states::{Covariance, ExpMovingAvg, Integral, Rank};
use crate::code;
use crate::collation::Collation;
use crate::errors::{CommandError, StoreResult, format_document};
use crate::expr::{Defined, Expr};

/// Which accumulator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Sum,
    Avg,
    Min,
    Max,
    Push,
    AddToSet,
    First,
    Last,
    MergeObjects,
    StdDevPop,
    StdDevSamp,
    FirstN,
    LastN,
    MinN,
    MaxN,
    Top,
    Bottom,
    TopN,
    BottomN,
    Median,
    Percentile,
    /// `$accumulator`: parsed, refused when a group starts (no JavaScript engine).
    JavaScript,
    // Window functions that accumulate over a frame.
    CovariancePop,
    CovarianceSamp,
    ExpMovingAvg,
    Locf,
    Integral,
    Rank,
    DenseRank,
    DocumentNumber,
}

/// What one document contributes: the input's value (`None`: missing) and, for the `$top`
/// family, its sort key.
#[derive(Debug, Clone, Default)]
pub(crate) struct Item {
    pub(crate) value: Option<Bson>,
    pub(crate) key: Vec<Bson>,
}

/// A parsed accumulator.
#[derive(Debug, Clone)]
pub(crate) struct Accumulator {
    pub(crate) kind: Kind,
    pub(crate) input: Expr,
    /// `n` for the `n` accumulators, evaluated once per group.
    pub(crate) n: Option<Expr>,
    pub(crate) top: Option<Arc<TopSort>>,
    /// `$percentile`'s `p` (0.5 for `$median`).
    pub(crate) ps: Arc<Vec<f64>>,
    /// `$expMovingAvg`'s weight of the newest value.
    pub(crate) alpha: Option<dec::Decimal128>,
    /// `$integral`'s `unit` in milliseconds.
    pub(crate) unit_ms: Option<i64>,
    /// The rank functions' sort direction.
    pub(crate) ascending: bool,
}

impl Accumulator {
    /// An accumulator of `kind` over `input`, with no other parameters.
    pub(crate) fn simple(kind: Kind, input: Expr) -> Accumulator {
        Accumulator {
            kind,
            input,
            n: None,
            top: None,
            ps: Arc::new(Vec::new()),
            alpha: None,
            unit_ms: None,
            ascending: true,
        }
    }

    /// Parses `$group`'s `{<name>: <argument>}`; `None` when `name` is no accumulator.
    pub(crate) fn parse_group(
        name: &str,
        argument: &Bson,
        spec: &Document,
    ) -> StoreResult<Option<Accumulator>> {
        let defined = Defined::TOP;
        let simple = |kind| Ok(Some(Accumulator::simple(kind, Expr::parse(argument)?)));
        match name {
            "$sum" => simple(Kind::Sum),
            "$avg" => simple(Kind::Avg),
            "$min" => simple(Kind::Min),
            "$max" => simple(Kind::Max),
            "$push" => simple(Kind::Push),
            "$addToSet" => simple(Kind::AddToSet),
            "$first" => simple(Kind::First),
            "$last" => simple(Kind::Last),
            "$mergeObjects" => simple(Kind::MergeObjects),
            "$stdDevPop" => simple(Kind::StdDevPop),
            "$stdDevSamp" => simple(Kind::StdDevSamp),
            "$count" => {
                if !matches!(argument, Bson::Document(empty) if empty.is_empty()) {
                    return Err(CommandError::new(
                        code::COUNT_ACCUMULATOR_ARGUMENT,
                        format!(
                            "$count takes no arguments, i.e. $count:{{}}, got {}",
                            format_document(spec)
                        ),
                    ));
                }
                Ok(Some(Accumulator::simple(
                    Kind::Sum,
                    Expr::Literal(Bson::Int32(1)),
                )))
            }
            "$firstN" | "$lastN" | "$minN" | "$maxN" => {
                super::acc_n::parse_pick(name, argument, &defined).map(Some)
            }
            "$top" | "$bottom" | "$topN" | "$bottomN" => {
                super::acc_n::parse_top(name, argument, &defined).map(Some)
            }
            "$median" | "$percentile" => {
                super::acc_percentile::parse(name, argument, &defined).map(Some)
            }
            "$accumulator" => super::acc_js::parse(argument, &defined).map(Some),
            _ => Ok(None),
        }
    }

    /// The accumulator comparing strings under `collation` where it sorts (`$top` family).
    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> Accumulator {
        if let Some(top) = &self.top {
            self.top = Some(Arc::new(top.with_collation(collation)));
        }
        self
    }

    /// What `root` contributes.
    pub(crate) fn item(&self, root: &Document) -> StoreResult<Item> {
        let value = self.input.evaluate(root)?;
        let key = match &self.top {
            Some(top) => top.key_of(root)?,
            None => Vec::new(),
        };
        Ok(Item { value, key })
    }

    /// A fresh state. `n_root` is the document `n` is evaluated against (a `$group`'s key
    /// when it is a document, else an empty one). `removable` states keep every value of a
    /// sliding window frame, as mongod's removable window functions do.
    pub(crate) fn start(&self, n_root: &Document, removable: bool) -> StoreResult<State> {
        let n = match &self.n {
            Some(n) => Some(validate_n(n.evaluate(n_root)?.as_ref())?),
            None => None,
        };
        let n = n.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
        Ok(match self.kind {
            Kind::Sum => State::Sum(Summation::default()),
            Kind::Avg => State::Avg(Summation::default()),
            Kind::Min | Kind::Max => State::Extreme {
                max: self.kind == Kind::Max,
                best: None,
            },
            Kind::Push | Kind::AddToSet => State::List {
                set: self.kind == Kind::AddToSet,
                items: Vec::new(),
                bytes: 0,
            },
            Kind::First => State::First(None),
            Kind::Last => State::Last(None),
            Kind::MergeObjects => State::MergeObjects {
                merged: Document::new(),
                bytes: 0,
            },
            Kind::StdDevPop | Kind::StdDevSamp => State::StdDev {
                sample: self.kind == Kind::StdDevSamp,
                count: 0,
                mean: 0.0,
                m2: 0.0,
            },
            Kind::FirstN | Kind::LastN => State::FirstLastN {
                last: self.kind == Kind::LastN,
                n,
                items: std::collections::VecDeque::new(),
                bytes: 0,
            },
            Kind::MinN | Kind::MaxN => State::MinMaxN(Box::new(MinMaxN::new(
                self.kind == Kind::MaxN,
                n,
                removable,
            ))),
            Kind::Top | Kind::Bottom | Kind::TopN | Kind::BottomN => {
                State::TopBottom(Box::new(TopBottom::new(self, n, removable)))
            }
            Kind::Median | Kind::Percentile => State::Quantiles(Box::new(Quantiles::new(
                self.kind == Kind::Median,
                Arc::clone(&self.ps),
                removable,
            ))),
            Kind::JavaScript => return Err(crate::expr::javascript::javascript_disabled()),
            Kind::CovariancePop | Kind::CovarianceSamp => {
                State::Covariance(Covariance::new(self.kind == Kind::CovarianceSamp))
            }
            Kind::ExpMovingAvg => State::ExpMovingAvg(ExpMovingAvg::new(self.alpha)),
            Kind::Locf => State::Locf(None),
            Kind::Integral => State::Integral(Box::new(Integral::new(self.unit_ms))),
            Kind::Rank | Kind::DenseRank | Kind::DocumentNumber => {
                State::Rank(Box::new(Rank::new(self.kind, self.ascending)))
            }
        })
    }
}

/// `n`: a positive number with an integral value (mongod's `AccumulatorN::validateN`, the
/// same check as the `$firstN`-family expressions').
pub(crate) fn validate_n(value: Option<&Bson>) -> StoreResult<i64> {
    crate::expr::checked_n(value)
}

/// The value of an expression that is a constant (a literal, or an array or object of them),
/// as mongod's optimizer folds it; `None` for anything that reads the document.
pub(crate) fn constant_of(expr: &Expr) -> Option<Bson> {
    match expr {
        Expr::Literal(value) => Some(value.clone()),
        Expr::Array(items) => items
            .iter()
            .map(constant_of)
            .collect::<Option<Vec<_>>>()
            .map(Bson::Array),
        Expr::Object(fields) => {
            let mut out = Document::new();
            for (name, value) in fields {
                out.insert(name.clone(), constant_of(value)?);
            }
            Some(Bson::Document(out))
        }
        _ => None,
    }
}
