//! CPU-only, independent checks of the Minority Game family: XSadd against its published
//! known-answer vectors, jump-ahead against stepping and the period, the game's traces replayed
//! from scratch (tables from the raw draws, every choice and score re-derived, winners from
//! the recorded choices), sequential = rayon with 1, 2, 3 and 7 threads for all five items,
//! the first step's winners against the binomial closed form, and the paper's period-64
//! phenomenon (Fig. 1) at CI size.

use approx::assert_abs_diff_eq;
use lockstep::mg::{JumpTable, Trace, mean_winner_ratio, play, setup, validate};
use lockstep_parity::config;
use lockstep_shared::mg::{Layout, MgParams};
use lockstep_shared::xsadd::{Gf2Matrix, Xsadd};
use proptest::prelude::*;

// Published known-answer output of XSadd (test_xsadd.txt of the reference implementation).
const U32_SEED_1234: [u32; 40] = [
    1823491521, 1658333335, 1467485721, 45623648, 3336175492, 2561136018, 181953608, 768231638, 3747468990, 633754442,
    1317015417, 2329323117, 688642499, 1053686614, 1029905208, 3711673957, 2701869769, 695757698, 3819984643,
    1221024953, 110368470, 2794248395, 2962485574, 3345205107, 592707216, 1730979969, 2620763022, 670475981,
    1891156367, 3882783688, 1913420887, 1592951790, 2760991171, 1168232321, 1650237229, 2083267498, 2743918768,
    3876980974, 2059187728, 3236392632,
];
const FLOAT_SEED_1234: [&str; 40] = [
    "0.03331007",
    "0.81703222",
    "0.52816284",
    "0.76104426",
    "0.09285594",
    "0.34277064",
    "0.40109119",
    "0.79619724",
    "0.71619850",
    "0.21930781",
    "0.68432468",
    "0.05859088",
    "0.86583626",
    "0.22139141",
    "0.95107991",
    "0.15838251",
    "0.02087647",
    "0.60301602",
    "0.01047149",
    "0.34406352",
    "0.63004553",
    "0.87420344",
    "0.50282019",
    "0.54803556",
    "0.65602762",
    "0.79743940",
    "0.99500567",
    "0.16452406",
    "0.98095649",
    "0.19823509",
    "0.33474532",
    "0.99497253",
    "0.26701063",
    "0.94721252",
    "0.47019744",
    "0.25536627",
    "0.12708941",
    "0.68251151",
    "0.36424583",
    "0.99484444",
];
const FLOAT_OC_SEED_1234: [&str; 40] = [
    "0.37725240",
    "0.21382922",
    "0.14707899",
    "0.56864202",
    "0.60882187",
    "0.68976843",
    "0.73614609",
    "0.40999711",
    "0.31972128",
    "0.79858387",
    "0.66440320",
    "0.21548229",
    "0.74349087",
    "0.17853391",
    "0.90402746",
    "0.12708771",
    "0.58778679",
    "0.24157828",
    "0.16073269",
    "0.37404722",
    "0.73107827",
    "0.24204212",
    "0.94200760",
    "0.57709163",
    "0.78034973",
    "0.98670763",
    "0.11757404",
    "0.64930904",
    "0.08019334",
    "0.60275578",
    "0.01833713",
    "0.69707412",
    "0.15503895",
    "0.15459728",
    "0.64105296",
    "0.85261655",
    "0.61728269",
    "0.12830931",
    "0.48726392",
    "0.09996688",
];
const U32_BY_ARRAY: [u32; 40] = [
    0x138a38f9, 0xb396fa84, 0xa55a2ee8, 0x24b7ed06, 0xf0bae2fe, 0xd8ace1a7, 0xd4b09a3f, 0xd7fcf441, 0xfc55ee1b,
    0x5b4ab585, 0xd4bf254b, 0x5b0f77ba, 0x31161b97, 0xb21ccc3b, 0xab418bfb, 0x4cc8476a, 0x06a1a28f, 0xcb1f50c6,
    0xf0ba2ed3, 0x7907f372, 0x3256d76c, 0xd843e864, 0xd63a60b7, 0xeff88358, 0xddc3b083, 0xb5734b65, 0xf08d644d,
    0xe5f6c809, 0x95bf2ae3, 0xe5867758, 0xf260d462, 0x39d244dc, 0xb9fbb8d7, 0x63e8f3d9, 0xb34ea936, 0x8fe4ee75,
    0x8803c8f1, 0xd74e420e, 0xa5c14d22, 0x20be253f,
];
const DOUBLE_BY_ARRAY: [&str; 40] = [
    "0.552047381607109",
    "0.639408872527188",
    "0.337048198266558",
    "0.170027204445214",
    "0.297217782321693",
    "0.378107544442969",
    "0.354542781183860",
    "0.019481399676904",
    "0.467015844606861",
    "0.804280133674323",
    "0.303579021852754",
    "0.885058909245960",
    "0.804774428452869",
    "0.389131428431311",
    "0.264431700200208",
    "0.892553690639173",
    "0.185588257980843",
    "0.436334162866084",
    "0.164766722882985",
    "0.026251785245855",
    "0.397869415441233",
    "0.218845075171990",
    "0.291569964273165",
    "0.248200155898307",
    "0.861900741618364",
    "0.294314643390440",
    "0.030138735010360",
    "0.897212204450965",
    "0.399092435495720",
    "0.004733267796798",
    "0.869817945287628",
    "0.112782260312631",
    "0.849040995323949",
    "0.756882735752882",
    "0.985322598387553",
    "0.815793896346572",
    "0.622562450767263",
    "0.886122346536408",
    "0.143136471332456",
    "0.237672814088574",
];

#[test]
fn xsadd_matches_the_published_vectors() {
    let mut x = Xsadd::new(1234);
    let u: Vec<u32> = (0..40).map(|_| x.next_u32()).collect();
    assert_eq!(u, U32_SEED_1234);
    // The float and floatOC lines continue the same stream.
    for (i, want) in FLOAT_SEED_1234.iter().enumerate() {
        assert_eq!(format!("{:.8}", x.next_f32() as f64), *want, "xsadd_float #{i}");
    }
    for (i, want) in FLOAT_OC_SEED_1234.iter().enumerate() {
        assert_eq!(format!("{:.8}", x.next_f32_oc() as f64), *want, "xsadd_floatOC #{i}");
    }
    let mut y = Xsadd::from_array(&[0x0a, 0x0b, 0x0c, 0x0d]);
    let u: Vec<u32> = (0..40).map(|_| y.next_u32()).collect();
    assert_eq!(u, U32_BY_ARRAY);
    for (i, want) in DOUBLE_BY_ARRAY.iter().enumerate() {
        assert_eq!(format!("{:.15}", y.next_f64()), *want, "xsadd_double #{i}");
    }
}

#[test]
fn float_conversions_are_exact_scalings() {
    let mut x = Xsadd::new(99);
    let mut y = x;
    for _ in 0..1000 {
        let u = y.next_u32();
        let f = x.next_f32();
        assert_eq!(f, ((u as f64) * 2f64.powi(-32)) as f32, "u = {u}");
    }
    // 2^32 − 1 rounds to 2^32 in f32, so the reference's float reaches 1.0.
    assert_eq!(lockstep_shared::xsadd::u32_to_f32(u32::MAX), 1.0);
}

#[test]
fn the_period_divides_2_pow_128_minus_1_and_no_smaller_factor_step() {
    // M^(2^128 − 1) = I, and M^((2^128 − 1)/q) ≠ I for each prime q of 2^128 − 1: the period is
    // exactly 2^128 − 1 (independent of how `jump` is used elsewhere).
    let t = JumpTable::new();
    let full = u128::MAX;
    assert_eq!(t.matrix(full), Gf2Matrix::identity());
    // 2^128 − 1 = 3 · 5 · 17 · 257 · 641 · 65537 · 274177 · 6700417 · 67280421310721
    let primes: [u128; 9] = [3, 5, 17, 257, 641, 65_537, 274_177, 6_700_417, 67_280_421_310_721];
    assert_eq!(primes.iter().product::<u128>(), full);
    for q in primes {
        assert_ne!(t.matrix(full / q), Gf2Matrix::identity(), "q = {q}");
    }
}

fn stepped(mut x: Xsadd, k: u64) -> Xsadd {
    for _ in 0..k {
        x.next_state();
    }
    x
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(12), ..config() })]

    #[test]
    fn jump_equals_stepping(seed: u32, k in 0u64..(1 << 20)) {
        let x = Xsadd::new(seed);
        let want = stepped(x, k);
        let mut a = x;
        a.jump(k as u128);
        prop_assert_eq!(a, want);
        prop_assert_eq!(JumpTable::new().jump(x, k as u128), want);
    }

    #[test]
    fn jumps_add(seed: u32, a in any::<u128>().prop_map(|v| v >> 1), b in any::<u128>().prop_map(|v| v >> 1)) {
        let x = Xsadd::new(seed);
        let mut one = x;
        one.jump(a);
        one.jump(b);
        let mut both = x;
        both.jump(a + b);
        prop_assert_eq!(one, both);
        let t = JumpTable::new();
        prop_assert_eq!(t.jump(t.jump(x, a), b), both);
        prop_assert_eq!(t.matrix(a).apply(x.to_bits()), t.jump(x, a).to_bits());
    }
}

/// Replays a trace from scratch, without `lockstep_shared::mg`'s game code: streams from
/// stepping the seed's generator, tables from the raw draws, every choice (best scores, tie
/// pick from the step's draw) and score, and winners from the recorded choices.
fn replay_check(params: &MgParams, seed: u32, trial: u64, tr: &Trace) {
    let (n, m, s, p, groups) = (params.n, params.m, params.s as u64, params.p as u64, params.groups);
    let bits = 1u64 << m;
    let words = bits.div_ceil(32);
    // 1. every group's stream is the seed's stream from R·trial + L·g, by plain stepping
    let l = 1 + n.div_ceil(groups) * (s * bits + p);
    assert_eq!(tr.draws.len() as u64, groups);
    for g in 0..groups {
        let mut x = stepped(Xsadd::new(seed), groups * l * trial + l * g);
        for (i, &d) in tr.draws[g as usize].iter().enumerate() {
            assert_eq!(d, x.next_u32(), "group {g} draw {i}");
        }
    }
    // 2. initial history from group 0's first draw
    assert_eq!(tr.history[0], tr.draws[0][0] >> (32 - m));
    // 3. tables from the draws
    let glen = |g: u64| (g..n).step_by(groups as usize).count() as u64;
    for a in 0..n {
        let (g, j) = (a % groups, a / groups);
        let base = (g == 0) as u64 + j * s * bits;
        for k in 0..s {
            for h in 0..bits {
                let bit = tr.draws[g as usize][(base + k * bits + h) as usize] >> 31;
                let word = tr.tables[((k * words + h / 32) * n + a) as usize];
                assert_eq!((word >> (h % 32)) & 1, bit, "agent {a} table {k} history {h}");
            }
        }
    }
    // 4. choices, scores, winners, history
    let mut scores = vec![0i64; (n * s) as usize];
    let mut h = tr.history[0] as u64;
    for t in 0..p {
        let mut ones = 0u64;
        let mut sides = vec![0u64; n as usize];
        for a in 0..n {
            let (g, j) = (a % groups, a / groups);
            let len = glen(g);
            let u = tr.draws[g as usize][((g == 0) as u64 + len * s * bits + t * len + j) as usize] as u64;
            let sc = &scores[(a * s) as usize..((a + 1) * s) as usize];
            let best = *sc.iter().max().unwrap();
            let tied: Vec<u64> = (0..s).filter(|&k| sc[k as usize] == best).collect();
            let k = tied[((u * tied.len() as u64) >> 32) as usize];
            assert_eq!(tr.used[(t * n + a) as usize] as u64, k, "step {t} agent {a}");
            let word = tr.tables[((k * words + h / 32) * n + a) as usize];
            sides[a as usize] = (word >> (h % 32)) as u64 & 1;
            ones += sides[a as usize];
        }
        let minority_side = if 2 * ones < n { 1 } else { 0 };
        let minority = if minority_side == 1 { ones } else { n - ones };
        assert_eq!(tr.winners[t as usize], minority, "winners at step {t}");
        for a in 0..n {
            let k = tr.used[(t * n + a) as usize] as u64;
            scores[(a * s + k) as usize] += if sides[a as usize] == minority_side { 1 } else { -1 };
        }
        h = ((h << 1) | minority_side) & (bits - 1);
        assert_eq!(tr.history[t as usize + 1] as u64, h, "history after step {t}");
    }
}

fn small_params() -> impl Strategy<Value = MgParams> {
    (0u64..40, 1u32..=6, 1u32..=4, 1u32..40, 1u64..12).prop_map(|(half, m, s, p, g)| {
        let n = 2 * half + 1;
        MgParams::new(n, m, s, p, g.min(n))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(24), ..config() })]

    #[test]
    fn traces_replay_and_agree_across_thread_counts(params in small_params(), seed: u32, trial in 0u64..3) {
        let (o, tr) = play(&params, seed, trial, None, true)?;
        let tr = tr.unwrap();
        replay_check(&params, seed, trial, &tr);
        prop_assert_eq!(&tr.outcome, &o);
        for threads in [1usize, 2, 3, 7] {
            let (po, ptr) = play(&params, seed, trial, Some(threads), true)?;
            prop_assert_eq!(&po, &o, "threads = {}", threads);
            prop_assert!(ptr.as_ref() == Some(&tr), "trace differs with {} threads", threads);
        }
    }
}

#[test]
fn untraced_equals_traced_and_seq_equals_rayon_on_a_bigger_game() {
    let params = validate(2_001, 5, 2, 200, 64).unwrap();
    let (a, _) = play(&params, 7, 3, None, false).unwrap();
    let (b, tr) = play(&params, 7, 3, None, true).unwrap();
    assert_eq!(a, b);
    assert_eq!(tr.unwrap().outcome, a);
    for threads in [1, 2, 3, 7] {
        assert_eq!(play(&params, 7, 3, Some(threads), false).unwrap().0, a, "{threads} threads");
    }
    // A different group count is a different (equally valid) game.
    let other = validate(2_001, 5, 2, 200, 63).unwrap();
    assert_ne!(play(&other, 7, 3, None, false).unwrap().0, a);
}

#[test]
fn setup_streams_do_not_overlap() {
    for (n, g) in [(11u64, 4u64), (1_023, 1_023), (15, 5), (7, 7)] {
        let params = validate(n, 3, 2, 9, g).unwrap();
        let lay = Layout::of(&params);
        for gr in 0..g {
            assert!(lockstep::mg::draws_of_group(&params, gr) as u128 <= lay.group_stride);
        }
        assert!(lay.trial_stride >= lay.r);
        let s = setup(&params, 1, 2);
        assert_eq!(s.states.len() as u64, g);
    }
}

#[test]
fn first_step_winners_match_the_binomial_closed_form() {
    // Tables are fresh and scores tie, so at step 0 every agent plays a uniformly random side:
    // ones ~ Binomial(n, 1/2) and E[winners] = n/2 − E|X − n/2| ≈ n/2 − sqrt(n/(2π)) (exact
    // value below by summation), standard deviation ≈ sqrt(n/4·(1 − 2/π)).
    let n = 1_001u64;
    let params = validate(n, 3, 2, 1, 16).unwrap();
    let trials = 400u64;
    let mean = (0..trials).map(|t| play(&params, 11, t, None, false).unwrap().0.winners(n)[0] as f64).sum::<f64>()
        / trials as f64;
    // exact E[min(X, n − X)]
    let mut ln_c = 0.0f64; // ln C(n, x)
    let mut exact = 0.0;
    for x in 0..=n {
        if x > 0 {
            ln_c += ((n - x + 1) as f64).ln() - (x as f64).ln();
        }
        exact += (x.min(n - x) as f64) * (ln_c - n as f64 * std::f64::consts::LN_2).exp();
    }
    let sd = ((n as f64 / 4.0) * (1.0 - 2.0 / std::f64::consts::PI)).sqrt();
    let se = sd / (trials as f64).sqrt();
    assert_abs_diff_eq!(mean, exact, epsilon = 4.0 * se);
    assert!(exact < n as f64 / 2.0 - 10.0);
}

/// Dominant period of a series by the periodogram after removing the least-squares line (the
/// slow rise of the winner ratio as scores settle): the period `len / f` of the frequency
/// `f ≥ 1` with the largest power.
fn dominant_period(x: &[f64]) -> f64 {
    let len = x.len();
    let nf = len as f64;
    let tm = (nf - 1.0) / 2.0;
    let xm = x.iter().sum::<f64>() / nf;
    let sxy: f64 = x.iter().enumerate().map(|(t, v)| (t as f64 - tm) * (v - xm)).sum();
    let sxx: f64 = (0..len).map(|t| (t as f64 - tm) * (t as f64 - tm)).sum();
    let slope = sxy / sxx;
    let r: Vec<f64> = x.iter().enumerate().map(|(t, v)| v - xm - slope * (t as f64 - tm)).collect();
    let mut best = (0.0, 0usize);
    for f in 1..=len / 2 {
        let (mut re, mut im) = (0.0, 0.0);
        for (t, v) in r.iter().enumerate() {
            let ang = 2.0 * std::f64::consts::PI * (f * t) as f64 / nf;
            re += v * ang.cos();
            im -= v * ang.sin();
        }
        let power = re * re + im * im;
        if power > best.0 {
            best = (power, f);
        }
    }
    nf / best.1 as f64
}

#[test]
fn winner_ratio_has_period_2_pow_m_plus_1() {
    // Paper Fig. 1 at CI size: n = 10,001, m = 5, s = 2, p = 256, 24 trials; the averaged
    // winner ratio falls towards each multiple of 2^(m+1) = 64 steps and jumps there. The
    // dominant period is picked among all 128 frequencies of the series.
    let params = validate(10_001, 5, 2, 256, 64).unwrap();
    let ratio = mean_winner_ratio(&params, 2026, 0, 24).unwrap();
    assert_eq!(dominant_period(&ratio), 64.0);
    // the minority is smaller than half on average (winners < n/2 at every step)
    assert!(ratio.iter().all(|&r| r < 0.5));
    // and the first period's dip: the ratio near step 60 is below its value after the jump
    let before = ratio[52..64].iter().sum::<f64>() / 12.0;
    let after = ratio[68..80].iter().sum::<f64>() / 12.0;
    assert!(before < after, "no jump at step 64: {before} vs {after}");
}

#[test]
fn dominant_period_finds_a_known_period() {
    // the detector itself: a sawtooth of period 32 on a rising line
    let x: Vec<f64> = (0..512).map(|t| 0.001 * t as f64 + (t % 32) as f64 * -0.01).collect();
    assert_eq!(dominant_period(&x), 32.0);
}

/// `mg_standalone_s2t`'s storage emulated on the CPU with the kernel's index formulas (its
/// parity on the GPU is `mg_parity`'s `mg_standalone_s2t_*`): the tables built in the device
/// layout (`table_index`), each row's whole 32-agent tiles transposed as `transpose_tables_s2`
/// does (lane `i` keeps the ballot of bit `i`: word `i·T + tile`), the passes of
/// `s2_standalone` (batches of 8 at offsets `(i·G) / 32` from `h0 + a / 32` with the group's bit
/// `g mod 32` when `G` is a multiple of 32 and the batch lies in whole tiles, single agents at
/// `(h mod 32)·T + a / 32`, bit `a mod 32`, or their own word in the partial tile), and the
/// packed `(d << 2) | (side << 1) | k` state through an `i16`. Returns the vote counts.
fn play_s2t_emulated(params: &MgParams, seed: u32, trial: u64) -> Vec<u64> {
    use lockstep_shared::mg::{
        Agents, NoTrace, Pass, build_tables, next_history, settle_s2_side, vote_s2_side, winning_side,
    };
    struct Device<'a> {
        params: MgParams,
        g: u64,
        tables: &'a mut [u32],
    }
    impl Agents for Device<'_> {
        fn table(&self, j: u64, k: u32, w: u32) -> u32 {
            self.tables[self.params.table_index(self.params.agent(self.g, j), k, w) as usize]
        }
        fn set_table(&mut self, j: u64, k: u32, w: u32, v: u32) {
            self.tables[self.params.table_index(self.params.agent(self.g, j), k, w) as usize] = v;
        }
        fn score(&self, _: u64, _: u32) -> i32 {
            0
        }
        fn set_score(&mut self, _: u64, _: u32, _: i32) {}
    }
    let (n, gs) = (params.n, params.groups);
    let su = setup(params, seed, trial);
    let mut rng = su.states.clone();
    let mut tables = vec![0u32; (n * (params.s * params.words) as u64) as usize];
    for g in 0..gs {
        let mut dev = Device { params: *params, g, tables: &mut tables };
        build_tables(params, params.group_len(g), &mut dev, &mut rng[g as usize], (g == 0) as u64, &mut NoTrace);
    }
    let full = n & !31;
    let tiles = full >> 5;
    for r in 0..(params.s * params.words) as u64 {
        let row = (r * n) as usize;
        let temp = tables[row..row + full as usize].to_vec();
        for tile in 0..tiles {
            for lane in 0..32u64 {
                let ballot = (0..32u64).fold(0u32, |v, l| v | ((temp[(tile * 32 + l) as usize] >> lane) & 1) << l);
                tables[row + (lane * tiles + tile) as usize] = ballot;
            }
        }
    }
    let mut state = vec![0i16; n as usize];
    let mask = params.history_mask();
    let (mut h_prev, mut w_prev, mut h_cur) = (su.h0, 0u32, su.h0);
    let mut counts = Vec::new();
    for k in 0..=params.p {
        let pass = Pass::new(k, params.p, h_prev, w_prev, h_cur);
        let (settle, vote) = (pass.settle.is_some(), pass.vote.is_some());
        let ws = pass.settle.map_or(0, |(_, w)| w);
        let hv = pass.vote.map_or(0, |(_, h)| h);
        let r0 = ((hv >> 5) as u64 * n) as usize;
        let t1 = (params.words as u64 * n) as usize;
        let h0 = r0 + ((hv & 31) as u64 * tiles) as usize;
        let narrow = settle && vote && gs < 1 << 28 && gs.is_multiple_of(32);
        let mut ones = 0u64;
        for g in 0..gs {
            let mut cur = rng[g as usize];
            let mut play = |x: i32, w0: u32, w1: u32, sh: u32| -> i16 {
                let d = if settle { settle_s2_side(x, ws) } else { x >> 2 };
                if vote {
                    let (side, packed) = vote_s2_side(d, cur.next_u32(), w0 >> sh, w1 >> sh, 0);
                    ones += side as u64;
                    packed as i16
                } else {
                    (d << 2) as i16
                }
            };
            let (mut left, mut a) = (params.group_len(g), g);
            if narrow {
                while left >= 8 && a + 7 * gs < full {
                    let b0 = h0 + (a >> 5) as usize;
                    for i in 0..8u64 {
                        let o = ((gs as u32 * i as u32) >> 5) as usize;
                        let ai = (a + i * gs) as usize;
                        state[ai] = play(state[ai] as i32, tables[b0 + o], tables[b0 + o + t1], (g & 31) as u32);
                    }
                    a += 8 * gs;
                    left -= 8;
                }
            }
            while left > 0 {
                let (o, sh) = if a < full {
                    (((hv & 31) as u64 * tiles + (a >> 5)) as usize, (a & 31) as u32)
                } else {
                    (a as usize, hv & 31)
                };
                let (w0, w1) = if vote { (tables[r0 + o], tables[r0 + o + t1]) } else { (0, 0) };
                state[a as usize] = play(state[a as usize] as i32, w0, w1, sh);
                a += gs;
                left -= 1;
            }
            if vote {
                rng[g as usize] = cur;
            }
        }
        if k == params.p {
            break;
        }
        counts.push(ones);
        w_prev = winning_side(ones, n);
        h_prev = h_cur;
        h_cur = next_history(h_cur, w_prev, mask);
    }
    counts
}

proptest! {
    #![proptest_config(ProptestConfig { cases: config().cases.min(64), ..config() })]

    /// The transposed standalone storage (emulated) plays the CPU game: every vote count equal,
    /// for group counts that are and are not multiples of 32, m up to 7 (several table words),
    /// a partial last tile or none.
    #[test]
    fn mg_standalone_s2t_layout_plays_the_cpu_game(half in 16u64..2_000, m in 1u32..=7, p in 1u32..40, k in 1u64..40, odd in 0u64..3, seed: u32, trial in 0u64..4) {
        let n = 2 * half + 1;
        let g = (32 * k - odd.min(k * 32 - 1)).min(n);
        let params = validate(n, m, 2, p, g).unwrap();
        let (want, _) = play(&params, seed, trial, None, false).unwrap();
        prop_assert_eq!(play_s2t_emulated(&params, seed, trial), want.ones);
    }
}
