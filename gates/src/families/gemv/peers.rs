//! The cuBLAS and cuBLASLt peer arms: their operands, their calls and their f64 reference.

use super::*;

pub(super) fn say_once(peers: &mut Peers, line: String) {
    if !peers.said.contains(&line) {
        println!("{line}");
        peers.said.push(line);
    }
}

impl Gemv {
    /// The peer arms of `shape` as its first upload found them.
    pub(super) fn peer_arms(&self, shape: Shape) -> Vec<Arm> {
        self.peers
            .borrow()
            .usable
            .get(&(shape.in_f, shape.out_f))
            .cloned()
            .unwrap_or_default()
    }

    /// Opens the libraries once and runs each peer once on this set: what fails is skipped for
    /// the shape, with one line saying why.
    pub(super) fn probe_peers(&self, gpu: &Gpu, shape: Shape, set: &mut Set) -> Result<(), Error> {
        let key = (shape.in_f, shape.out_f);
        if self.peers.borrow().usable.contains_key(&key) || set.peer.is_none() {
            return Ok(());
        }
        let mut peers = self.peers.borrow_mut();
        if peers.blas.is_none() {
            match Blas::new(gpu)? {
                Ok(b) => peers.blas = Some(b),
                Err(why) => say_once(
                    &mut peers,
                    format!("peer cublas bf16 gemv: skipped ({why})"),
                ),
            }
        }
        if peers.lt.is_none() {
            match BlasLt::new(gpu)? {
                Ok(l) => peers.lt = Some(l),
                Err(why) => say_once(
                    &mut peers,
                    format!("peer cublaslt e4m3 gemm: skipped ({why})"),
                ),
            }
        }
        let mut usable = Vec::new();
        for arm in [Arm::Bf16, Arm::Fp8] {
            let ran = run_peer(&mut peers, gpu, shape, arm, set).and_then(|_| gpu.synchronize());
            match ran {
                Ok(()) => usable.push(arm),
                Err(e) => say_once(
                    &mut peers,
                    format!("peer {}: skipped for {shape} ({e})", arm.label()),
                ),
            }
        }
        peers.usable.insert(key, usable);
        Ok(())
    }
}

/// Enqueues one peer call on `set`.
pub(super) fn run_peer(
    peers: &mut Peers,
    gpu: &Gpu,
    shape: Shape,
    arm: Arm,
    set: &mut Set,
) -> Result<(), Error> {
    let p = set
        .peer
        .as_mut()
        .expect("peer buffers exist where peers run");
    let missing = |what| Error::Peer {
        library: what,
        during: "running a peer".into(),
        status: "the library is not loaded".into(),
    };
    match arm {
        Arm::Bf16 => peers
            .blas
            .as_ref()
            .ok_or_else(|| missing("cuBLAS"))?
            .gemv_bf16(gpu, &p.w_bf16, &p.x_bf16, &mut p.y, shape.in_f, shape.out_f),
        Arm::Fp8 => peers
            .lt
            .as_mut()
            .ok_or_else(|| missing("cuBLASLt"))?
            .matmul_e4m3(
                gpu,
                &set.e4m3,
                &p.x_e4m3,
                &p.a_scale,
                &p.b_scale,
                &p.c,
                &mut p.y,
                shape.in_f,
                shape.out_f,
            ),
        _ => unreachable!("not a peer arm"),
    }
}

/// The e4m3 code nearest to `v` (ties to the even code), saturating at +-448.
pub(super) fn encode_e4m3(v: f32) -> u8 {
    let sign = if v.is_sign_negative() { 0x80 } else { 0 };
    let a = v.abs();
    let mut best = 0u8;
    for code in 0u8..0x7F {
        let cv = f16::from_bits(E4M3_F16[code as usize].0).to_f32();
        let bv = f16::from_bits(E4M3_F16[best as usize].0).to_f32();
        let (dc, db) = ((cv - a).abs(), (bv - a).abs());
        if dc < db || (dc == db && code % 2 == 0) {
            best = code;
        }
    }
    best | sign
}

/// The peers' operands: the e4m3 weights in bf16 (exact), activation row 0 dequantized to bf16,
/// and the same row in e4m3 with a scale that maps its largest magnitude to 448.
pub(super) fn peer_inputs(inputs: &Inputs, shape: Shape) -> PeerInputs {
    let in_f = shape.in_f;
    let nb = in_f / QK as usize;
    let w_bf16 = inputs
        .e4m3
        .iter()
        .map(|&b| bf16::from_f64(launch::e4m3_f64(b) * f64::from(E4M3_SCALE)))
        .collect();
    let x0 = launch::q8_1_row_f64(&inputs.x_qs[..in_f], &inputs.x_d[..nb]);
    let x_bf16 = x0.iter().map(|&v| bf16::from_f64(v)).collect();
    let amax = x0.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let b_scale = if amax > 0.0 {
        (amax / 448.0) as f32
    } else {
        1.0
    };
    let mut x_e4m3 = vec![0u8; FP8_COLUMNS * in_f];
    for (q, &v) in x_e4m3.iter_mut().zip(&x0) {
        *q = encode_e4m3((v / f64::from(b_scale)) as f32);
    }
    PeerInputs {
        w_bf16,
        x_bf16,
        x_e4m3,
        b_scale,
    }
}

/// The f64 reference of a peer on its own operands, and its bound.
pub(super) fn peer_reference(
    p: &PeerInputs,
    inputs: &Inputs,
    shape: Shape,
    arm: Arm,
) -> (Vec<f64>, Vec<f64>, f64) {
    let in_f = shape.in_f;
    let x: Vec<f64> = match arm {
        Arm::Bf16 => p.x_bf16.iter().map(|v| v.to_f64()).collect(),
        _ => p.x_e4m3[..in_f]
            .iter()
            .map(|&b| launch::e4m3_f64(b) * f64::from(p.b_scale))
            .collect(),
    };
    let bound = if arm == Arm::Bf16 {
        BF16_BOUND
    } else {
        FP8_BOUND
    };
    let (mut y, mut mag) = (
        Vec::with_capacity(shape.out_f),
        Vec::with_capacity(shape.out_f),
    );
    for r in 0..shape.out_f {
        let w = launch::e4m3_row_f64(&inputs.e4m3[r * in_f..(r + 1) * in_f], E4M3_SCALE);
        y.push(w.iter().zip(&x).map(|(a, b)| a * b).sum());
        mag.push(w.iter().zip(&x).map(|(a, b)| (a * b).abs()).sum());
    }
    (y, mag, bound)
}
