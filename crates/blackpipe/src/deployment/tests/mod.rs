mod errors;
mod hello;
mod model;
