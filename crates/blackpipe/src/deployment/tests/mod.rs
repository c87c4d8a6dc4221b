mod admin;
mod errors;
mod hello;
mod model;
