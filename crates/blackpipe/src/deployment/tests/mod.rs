mod admin;
mod capacity;
mod errors;
mod hello;
mod model;
mod model_props;
mod replay;
mod votes;
