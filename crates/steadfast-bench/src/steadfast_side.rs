//! steadfast as a contender.

crate::contender::contender!(SteadfastSide, steadfast, "steadfast");
