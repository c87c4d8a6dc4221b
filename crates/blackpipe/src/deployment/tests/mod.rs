mod admin;
mod errors;
mod hello;
mod model;
mod model_props;
mod replay;
