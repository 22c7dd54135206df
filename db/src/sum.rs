//! Exact sums: what `sum` and `avg` add, in the engine and over lists alike.
//!
//! A sum must not depend on the order its values come in: the engine visits rows in
//! id order or in an index's key order, a query run in bytecode visits them in its
//! `order by`, and LANGUAGE.md §7 says the result is the same whichever path is
//! chosen. Float addition rounds at each step, so [`FloatSum`] keeps the exact sum of
//! every value added as a fixed-point integer wide enough for any `f64` (a
//! "superaccumulator") and rounds once, to nearest even, when it is read. Int sums
//! are kept in 128 bits ([`IntSum`]), so only a total that does not fit traps, not a
//! partial sum on the way to it.

/// Bits per limb. Limbs are `i64` holding 32-bit digits, so a limb takes 2^30
/// additions of digits (each below 2^32) before its carries must be moved up.
const DIGIT: u32 = 32;
/// Limbs: the fixed point's unit is 2^-1074 (the least subnormal), an `f64` reaches
/// 2^1024, and 2^64 values need 64 more bits: 2162 bits, 68 limbs, and one spare.
const LIMBS: usize = 69;
/// Additions between carry propagations.
const BATCH: u32 = 1 << 30;

/// The exact sum of `f64` values, whatever their order; read it with [`FloatSum::value`].
#[derive(Clone)]
pub struct FloatSum {
    limbs: [i64; LIMBS],
    /// Additions since the carries were last moved up.
    pending: u32,
    nan: bool,
    pos_inf: bool,
    neg_inf: bool,
}

impl Default for FloatSum {
    fn default() -> Self {
        FloatSum {
            limbs: [0; LIMBS],
            pending: 0,
            nan: false,
            pos_inf: false,
            neg_inf: false,
        }
    }
}

impl FloatSum {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `x` exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as u32;
        let frac = bits & ((1 << 52) - 1);
        if exp == 0x7ff {
            if frac != 0 {
                self.nan = true;
            } else if x > 0.0 {
                self.pos_inf = true;
            } else {
                self.neg_inf = true;
            }
            return;
        }
        // x = m * 2^(shift - 1074): a subnormal has no hidden bit and the least
        // exponent; a normal one has the hidden bit and is shifted by exp - 1.
        let (m, shift) = if exp == 0 {
            (frac, 0)
        } else {
            (frac | (1 << 52), exp - 1)
        };
        if m == 0 {
            return;
        }
        if self.pending == BATCH {
            self.carry();
        }
        self.pending += 1;
        let at = (shift / DIGIT) as usize;
        // At most 53 + 31 bits: three digits.
        let wide = u128::from(m) << (shift % DIGIT);
        let digits = [
            (wide & 0xffff_ffff) as i64,
            ((wide >> 32) & 0xffff_ffff) as i64,
            (wide >> 64) as i64,
        ];
        let negative = bits >> 63 == 1;
        for (i, d) in digits.into_iter().enumerate() {
            if negative {
                self.limbs[at + i] -= d;
            } else {
                self.limbs[at + i] += d;
            }
        }
    }

    /// Moves each limb's carry (or borrow) into the next, so every limb but the last
    /// holds a digit in `0..2^32` and the last holds the sign.
    fn carry(&mut self) {
        for i in 0..LIMBS - 1 {
            let c = self.limbs[i] >> DIGIT;
            self.limbs[i] -= c << DIGIT;
            self.limbs[i + 1] += c;
        }
        self.pending = 0;
    }

    /// The sum rounded once to the nearest `f64` (ties to even): NaN when a NaN was
    /// added or both infinities were, an infinity when one was (or the exact sum is
    /// beyond the largest `f64`), and 0.0 (never -0.0) for an exact zero.
    pub fn value(&self) -> f64 {
        if self.nan || (self.pos_inf && self.neg_inf) {
            return f64::NAN;
        }
        if self.pos_inf {
            return f64::INFINITY;
        }
        if self.neg_inf {
            return f64::NEG_INFINITY;
        }
        let mut n = self.clone();
        n.carry();
        let negative = n.limbs[LIMBS - 1] < 0;
        if negative {
            for l in &mut n.limbs {
                *l = -*l;
            }
            n.carry();
        }
        let Some(top) = n.limbs.iter().rposition(|&l| l != 0) else {
            return 0.0;
        };
        // The top three digits (at least 65 significant bits, or the whole value),
        // with any lower nonzero digit folded into the last bit: enough for the
        // conversion to round correctly, ties included.
        let low = top.saturating_sub(2);
        let mut head: u128 = 0;
        for i in (low..=top).rev() {
            head = (head << DIGIT) | (n.limbs[i] as u128);
        }
        if n.limbs[..low].iter().any(|&l| l != 0) {
            head |= 1;
        }
        // Below 2^53 units `head` is the whole value, exact as an f64 (a subnormal or
        // a small normal), and the scaling below is exact too. Above, the one
        // rounding is the conversion's: `head` is the whole value (up to about 2^96
        // units, `low` is 0) or has more than 64 bits with the sticky bit below them,
        // either way enough for a correct rounding.
        let magnitude = scale(head as f64, (low as i32) * DIGIT as i32 - 1074);
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// `x * 2^k`, exact while the result is a normal `f64` or `x` times a power of two
/// that is exactly representable; in steps so no intermediate power under- or
/// overflows.
fn scale(mut x: f64, mut k: i32) -> f64 {
    while k > 1000 {
        x *= 2f64.powi(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= 2f64.powi(-1000);
        k += 1000;
    }
    x * 2f64.powi(k)
}

/// The exact sum of `i64` values in 128 bits: no partial sum overflows (2^64 values
/// of at most 2^63 in size fit), so whether the total fits an Int does not depend on
/// the order of the values.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntSum(pub i128);

impl IntSum {
    #[inline]
    pub fn add(&mut self, x: i64) {
        self.0 = self.0.wrapping_add(i128::from(x));
    }

    /// The total as an Int, or `None` when it does not fit.
    pub fn value(self) -> Option<i64> {
        i64::try_from(self.0).ok()
    }

    /// The total as an Int, or the message of the OVERFLOW trap when it does not fit
    /// (the engine's `sum` and the list builtin's say the same).
    pub fn total(self) -> Result<i64, String> {
        self.value()
            .ok_or_else(|| format!("sum overflows Int: the total is {}", self.0))
    }

    /// The mean of `n` values (`n` > 0) as a Float: the exact total converted (rounded
    /// to nearest), then divided.
    pub fn mean(self, n: usize) -> f64 {
        self.0 as f64 / n as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(xs: &[f64]) -> f64 {
        let mut s = FloatSum::new();
        for &x in xs {
            s.add(x);
        }
        s.value()
    }

    #[test]
    fn rounds_once() {
        assert_eq!(exact(&[]), 0.0);
        assert_eq!(exact(&[-0.0]).to_bits(), 0.0f64.to_bits());
        assert_eq!(exact(&[1e16, 1.0, 1.0]), 1.0000000000000002e16);
        assert_eq!(exact(&[1.0, 1e16, 1.0]), 1.0000000000000002e16);
        assert_eq!(exact(&[0.1; 10]), 1.0);
        assert_eq!(exact(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(exact(&[1e308, 1e308, -1e308]), 1e308);
        assert_eq!(exact(&[f64::MAX, f64::MAX, -f64::MAX]), f64::MAX);
        assert_eq!(exact(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(exact(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
        assert_eq!(exact(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(exact(&[5e-324, -5e-324]), 0.0);
        assert_eq!(
            exact(&[f64::MIN_POSITIVE, -5e-324]),
            f64::MIN_POSITIVE - 5e-324
        );
        assert_eq!(exact(&[-1.5, 0.25]), -1.25);
        // Ties go to even; a lower bit breaks the tie.
        let half_ulp = 2f64.powi(-53);
        assert_eq!(exact(&[1.0, half_ulp]), 1.0);
        assert_eq!(
            exact(&[1.0, half_ulp, 2f64.powi(-200)]),
            1.0 + 2f64.powi(-52)
        );
        assert_eq!(
            exact(&[1.0 + 2f64.powi(-52), half_ulp]),
            1.0 + 2f64.powi(-51)
        );
        assert_eq!(
            exact(&[-1.0, -half_ulp, -2f64.powi(-200)]),
            -1.0 - 2f64.powi(-52)
        );
        // Values from math.fsum (CPython).
        assert_eq!(exact(&[0.1, 0.2, 0.3]), 0.6);
        assert_eq!(exact(&[1e-16, 1.0, 1e-16]), 1.0000000000000002);
    }

    #[test]
    fn specials() {
        assert!(exact(&[1.0, f64::NAN]).is_nan());
        assert!(exact(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(exact(&[f64::INFINITY, -f64::MAX]), f64::INFINITY);
        assert_eq!(exact(&[1.0, f64::NEG_INFINITY]), f64::NEG_INFINITY);
        // A partial sum beyond the largest f64 is no infinity: only the total counts.
        assert_eq!(exact(&[f64::MAX, f64::MAX, -f64::MAX, -f64::MAX]), 0.0);
    }

    /// Any order gives the same bits, and integers small enough to add exactly give
    /// what plain addition gives.
    #[test]
    fn order_does_not_matter() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..300 {
            let n = 1 + (next() % 40) as usize;
            let mut xs: Vec<f64> = (0..n)
                .map(|_| {
                    let r = next();
                    match round % 3 {
                        // Any bits but NaN and the infinities.
                        0 => {
                            let x = f64::from_bits(r);
                            if x.is_finite() {
                                x
                            } else {
                                1.0
                            }
                        }
                        // Near one scale, with cancellations.
                        1 => (r as i64 as f64) * 2f64.powi((r % 64) as i32 - 32),
                        _ => ((r >> 11) % 1_000_000) as f64 - 500_000.0,
                    }
                })
                .collect();
            let first = exact(&xs);
            for _ in 0..5 {
                for i in (1..xs.len()).rev() {
                    let j = (next() % (i as u64 + 1)) as usize;
                    xs.swap(i, j);
                }
                assert_eq!(exact(&xs).to_bits(), first.to_bits(), "{xs:?}");
            }
            if round % 3 == 2 {
                assert_eq!(first, xs.iter().sum::<f64>(), "{xs:?}");
            }
        }
    }

    #[test]
    fn many_additions_carry() {
        let mut s = FloatSum::new();
        s.pending = BATCH - 1;
        for _ in 0..10 {
            s.add(f64::MAX);
            s.add(-f64::MAX);
            s.add(3.0);
        }
        assert_eq!(s.value(), 30.0);
    }

    #[test]
    fn int_sums_overflow_only_at_the_end() {
        let mut s = IntSum::default();
        for x in [i64::MAX, 1, -1] {
            s.add(x);
        }
        assert_eq!(s.value(), Some(i64::MAX));
        s.add(1);
        assert_eq!(s.value(), None);
        let mut s = IntSum::default();
        for x in [i64::MIN, -1, 1] {
            s.add(x);
        }
        assert_eq!(s.value(), Some(i64::MIN));
    }
}
