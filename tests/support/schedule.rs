//! What the schedule's property and differential tests share: the zones and the span of start
//! times they draw from.

/// The zones of issue 2: DST in both hemispheres, 30-minute shifts, 45-minute offsets, no DST,
/// and changes of standard offset (Caracas 2016, Moscow 2014, Sao Paulo ending DST 2019).
pub const ZONES: &[&str] = &[
    "America/New_York",
    "Europe/London",
    "Australia/Lord_Howe",
    "Asia/Kathmandu",
    "Australia/Eucla",
    "Asia/Tokyo",
    "UTC",
    "America/Caracas",
    "Europe/Moscow",
    "America/Sao_Paulo",
];

/// 2000-01-01T00:00:00Z and 2040-01-01T00:00:00Z.
pub const START_MIN: i64 = 946_684_800;
pub const START_MAX: i64 = 2_208_988_800;

/// The `@` specials that have a schedule (all but `@reboot`).
pub const SPECIALS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];
