//! The schedule against croner on the same expressions and times, and properties of the parser
//! and of `next_after` over generated input.

#[path = "../support"]
mod support {
    pub mod schedule;
}

mod croner;
mod property;
