//! Jenkins' `H` in every field and every form: where its values lie, that one seed always gives
//! the same ones, that many seeds spread them over the range, and the errors of what is not `H`.

use proptest::prelude::*;

use super::*;

/// The schedule of `expr` with `hash` as the entry's `H` seed.
fn hashed(expr: &str, hash: u64) -> Schedule {
    match parse_fields(expr.as_bytes(), 0, 0, hash) {
        Ok(Fields {
            when: When::Periodic(s),
            hashed: true,
            ..
        }) => s,
        other => panic!("{expr:?} did not parse to a hashed schedule: {other:?}"),
    }
}

/// `token` in `field`, `*` in the others.
fn line_with(field: Field, token: &str) -> String {
    let mut parts = ["*"; 5].map(String::from);
    parts[field as usize] = token.to_string();
    parts.join(" ")
}

/// The range a bare `H` picks in.
fn bare_range(field: Field) -> (u8, u8) {
    match field {
        Field::DayOfMonth => (1, 28),
        Field::DayOfWeek => (0, 6),
        _ => field.bounds(),
    }
}

#[test]
fn each_form_resolves_as_jenkins_defines_it() {
    let s = hashed("H H(0-7) H H(6-8) H(1-5)", 1);
    let one = |f: Field| {
        let v = values(&s, f);
        assert_eq!(v.len(), 1, "{f:?}: {v:?}");
        v[0]
    };
    assert!(one(Field::Minute) <= 59);
    assert!(one(Field::Hour) <= 7);
    assert!((1..=28).contains(&one(Field::DayOfMonth)));
    assert!((6..=8).contains(&one(Field::Month)));
    assert!((1..=5).contains(&one(Field::DayOfWeek)));
    // A step: every n-th value from an offset below n, over the field or the range.
    let s = hashed("H/15 H(9-17)/4 H/7 * *", 2);
    let m = values(&s, Field::Minute);
    assert_eq!(m.len(), 4, "{m:?}");
    assert!(
        m[0] < 15 && m.windows(2).all(|w| w[1] - w[0] == 15),
        "{m:?}"
    );
    let h = values(&s, Field::Hour);
    assert!((9..13).contains(&h[0]), "{h:?}");
    assert!(h.windows(2).all(|w| w[1] - w[0] == 4) && *h.last().unwrap() <= 17);
    // Day of month keeps to 1-28 without a range, so H/7 runs four times every month.
    assert_eq!(values(&s, Field::DayOfMonth).len(), 4);
    // A list of H items: each gets its own value.
    let s = hashed("H(0-29),H(30-59) * * * *", 3);
    let m = values(&s, Field::Minute);
    assert!(m.len() == 2 && m[0] < 30 && m[1] >= 30, "{m:?}");
    // An H field is not starred: H H is fixed-time, like the numbers it stands for.
    assert_eq!(hashed("H H * * *", 4).class(), Class::FixedTime);
    assert_eq!(hashed("H/10 * * * *", 4).class(), Class::Wildcard);
    assert!(!hashed("H H * * *", 4).is_starred(Field::Minute));
    // Names stand in a range as they do elsewhere; Sunday as 7 is folded into 0.
    let s = hashed("0 0 * H(jun-aug) H(sat-sun)", 5);
    assert!((6..=8).contains(&values(&s, Field::Month)[0]));
    assert!([0, 6].contains(&values(&s, Field::DayOfWeek)[0]));
}

#[test]
fn a_field_without_h_does_not_say_it_is_hashed() {
    let fields = parse_fields(b"5 4 * * * cmd", 0, 0, 9).unwrap();
    assert!(!fields.hashed);
    let fields = parse_fields(b"5,6 1-2 ~ * * cmd", 0, 0, 9).unwrap();
    assert!(!fields.hashed);
    assert!(parse_fields(b"5 4 * * H cmd", 0, 0, 9).unwrap().hashed);
}

#[test]
fn h_values_are_the_same_in_every_release() {
    // Crontabs written today must keep their times after an upgrade.
    let s = hashed("H H(0-7) H H/5 H(1-5)/2", 0x1234_5678);
    let shown = s.to_string();
    assert_eq!(shown, "29 0 21 3,8 1,3,5", "{shown}");
    // An expression given alone is hashed from its text, each run of blanks one space.
    assert_eq!(
        parse_expression("H H * * *", 0),
        parse_expression(" H\tH  * * * ", 0)
    );
    assert_eq!(expression_hash(b"H H * * *"), 0xbb4e_07d0_80a9_11b8);
}

#[test]
fn bad_forms_are_errors_at_their_column() {
    let cases = [
        (
            "H(5-2) * * * *",
            3,
            "range 5-2 is reversed in the minute field",
        ),
        (
            "H(0-99) * * * *",
            5,
            "99 is out of range 0-59 in the minute field",
        ),
        ("H/0 * * * *", 3, "a step of 0 in the minute field"),
        (
            "H5 * * * *",
            2,
            "unexpected '5' after 'H' in the minute field",
        ),
        (
            "HH * * * *",
            2,
            "unexpected 'H' after 'H' in the minute field",
        ),
        (
            "0 H~ * * *",
            4,
            "unexpected '~' after 'H' in the hour field",
        ),
        (
            "H(5) * * * *",
            4,
            "expected a range a-b in 'H(a-b)' in the minute field",
        ),
        ("H() * * * *", 3, "expected a range a-b in 'H(a-b)'"),
        ("H(1- * * * *", 5, "expected a range a-b in 'H(a-b)'"),
        (
            "0 H(1-5 * * *",
            8,
            "expected ')' after the range of 'H(' in the hour field",
        ),
        (
            "H/90 * * * *",
            3,
            "step 90 is larger than the 60 values of H's range 0-59",
        ),
        (
            "0 0 H(1-10)/11 * *",
            13,
            "step 11 is larger than the 10 values of H's range 1-10",
        ),
        (
            "H/ * * * *",
            3,
            "expected a step number after '/' in the minute",
        ),
        (
            "0 0 H(0-5) * *",
            7,
            "0 is out of range 1-31 in the day of month field",
        ),
        ("h * * * *", 1, "a hashed value is a capital 'H'"),
        ("1-H * * * *", 3, "'H' is not a number, in the minute field"),
    ];
    for (expr, column, message) in cases {
        let e = error(expr);
        assert_eq!(e.offset + 1, column, "{expr:?}: {e}");
        assert!(e.message.contains(message), "{expr:?}: {e}");
    }
}

/// One field and one form of `H`: the token, the range its values must lie in, and the step.
fn form() -> impl Strategy<Value = (Field, String, (u8, u8), Option<u8>)> {
    let field = prop::sample::select(Field::ALL.to_vec());
    (field, 0..4u8, any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(f, form, a, b, n)| {
        let (lo, hi) = f.bounds();
        let hi = if f == Field::DayOfWeek { 6 } else { hi };
        let span = u64::from(hi - lo) + 1;
        let (x, y) = (lo + (a % span) as u8, lo + (b % span) as u8);
        let (first, last) = (x.min(y), x.max(y));
        let (range, text) = match form % 2 {
            0 => (bare_range(f), "H".to_string()),
            _ => ((first, last), format!("H({first}-{last})")),
        };
        let size = u64::from(range.1 - range.0) + 1;
        let step = (form >= 2).then(|| 1 + (n % size) as u8);
        let text = match step {
            Some(n) => format!("{text}/{n}"),
            None => text,
        };
        (f, text, range, step)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4_000))]

    /// Every field, every form: the values lie in the range, form one value or one step
    /// pattern from an offset below the step, and the same seed gives the same values.
    #[test]
    fn an_h_field_resolves_to_one_value_or_one_step_pattern_in_its_range(
        (field, token, (first, last), step) in form(),
        seed: u64,
    ) {
        let expr = line_with(field, &token);
        let s = hashed(&expr, seed);
        prop_assert_eq!(s, hashed(&expr, seed));
        let v = values(&s, field);
        prop_assert!(v.iter().all(|x| (first..=last).contains(x)), "{} {:?}", expr, v);
        match step {
            None => prop_assert_eq!(v.len(), 1, "{} {:?}", expr, v),
            Some(n) => {
                let offset = v[0] - first;
                prop_assert!(offset < n, "{} {:?}", expr, v);
                let want: Vec<u8> = (first + offset..=last).step_by(usize::from(n)).collect();
                prop_assert_eq!(&v, &want, "{}", expr);
            }
        }
        // The other fields are untouched.
        for other in Field::ALL.into_iter().filter(|&f| f != field) {
            prop_assert!(s.is_starred(other));
        }
    }
}

#[test]
fn many_seeds_spread_the_values_evenly_over_the_range() {
    for field in Field::ALL {
        let (lo, hi) = bare_range(field);
        let span = usize::from(hi - lo) + 1;
        let per_value = 300;
        // One range and one step pattern in each field.
        let cases = [
            ("H".to_string(), span),
            (format!("H/{}", span.min(7)), span.min(7)),
        ];
        for (token, slots) in cases {
            let expr = line_with(field, &token);
            let mut seen = vec![0usize; slots];
            for seed in 0..(slots * per_value) as u64 {
                let first = values(&hashed(&expr, seed), field)[0];
                seen[usize::from(first - lo)] += 1;
            }
            // Each value about `per_value` times: within a third of it either way.
            let (min, max) = (seen.iter().min().unwrap(), seen.iter().max().unwrap());
            assert!(
                *min >= per_value * 2 / 3 && *max <= per_value * 4 / 3,
                "{expr}: {seen:?}"
            );
        }
    }
}
