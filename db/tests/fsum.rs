//! `FloatSum` against an independent oracle: CPython's `math.fsum`, which rounds the
//! exact sum once, as `FloatSum` does. `fixtures/fsum.txt` holds 400 lists (random
//! bits, wide exponents, cancellations, subnormals, halfway and sticky cases, values
//! near the largest Float) with fsum's result for each, made once with
//! `/usr/bin/python3` (Debian's CPython 3.11): for each list, `math.fsum(xs)` and the
//! values, as the hex of their bits. Lists whose fsum raises `OverflowError` are left
//! out. wo differs from fsum only in the sign of an exact zero (always 0.0).

use wo_db::FloatSum;

fn from_hex(h: &str) -> f64 {
    f64::from_bits(u64::from_str_radix(h, 16).expect("hex bits"))
}

#[test]
fn float_sums_match_cpythons_fsum() {
    let text = include_str!("fixtures/fsum.txt");
    let mut checked = 0;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let want = from_hex(words.next().expect("the expected sum"));
        let xs: Vec<f64> = words.map(from_hex).collect();
        // In the order given, and reversed: the order must not matter.
        for order in [xs.clone(), xs.iter().rev().copied().collect()] {
            let mut sum = FloatSum::new();
            for &x in &order {
                sum.add(x);
            }
            let got = sum.value();
            let same = got.to_bits() == want.to_bits() || (got == 0.0 && want == 0.0);
            assert!(same, "sum of {order:?}: {got:e}, fsum gives {want:e}");
        }
        checked += 1;
    }
    assert_eq!(checked, 400);
}
