//! The cuBLAS and cuBLASLt peer arms at every m: their operands, their calls, the FP8 peer's
//! column count, and their f64 reference.

use super::*;

/// The peers' operands, derived from the same weights and activation rows.
pub(super) struct PeerInputs {
    pub(super) w_bf16: Vec<bf16>,
    /// Every activation row in bf16; the bf16 peer at m reads the first m.
    pub(super) x_bf16: Vec<bf16>,
    /// Per m of [`BATCHES`], the FP8 peer's activation: rows `0..m` in e4m3 under one scale.
    pub(super) fp8: [Fp8Activation; BATCHES.len()],
    /// The f64 references of the peers at every m, made on first use (rows as [`peer_rows`]).
    pub(super) refs: OnceCell<Reference>,
}

/// The FP8 peer's activation at one m: [`FP8_COLUMNS`] rows of e4m3 codes, those past m zero
/// (the columns the library may be given beyond m), and the per-tensor scale that maps the m
/// rows' largest magnitude to 448, as a serving stack would quantize that batch.
pub(super) struct Fp8Activation {
    pub(super) x: Vec<u8>,
    pub(super) scale: f32,
}

/// The peers' device operands and outputs in one buffer set.
pub(super) struct PeerBufs {
    pub(super) w_bf16: CudaSlice<bf16>,
    pub(super) x_bf16: CudaSlice<bf16>,
    /// Per m of [`BATCHES`]: the e4m3 activation and its scale (each scale an allocation of its
    /// own, as cuBLASLt asks).
    pub(super) fp8: Vec<(CudaSlice<u8>, CudaSlice<f32>)>,
    pub(super) a_scale: CudaSlice<f32>,
    pub(super) c: CudaSlice<f32>,
    pub(super) y: CudaSlice<f32>,
}

/// Which peers a shape can run, found on its first upload.
#[derive(Default)]
pub(super) struct Peers {
    pub(super) blas: Option<Blas>,
    pub(super) lt: Option<BlasLt>,
    /// Per shape, the peer arms that ran (a peer that refuses a shape is skipped with a line).
    pub(super) usable: HashMap<(usize, usize), ShapePeers>,
    pub(super) said: Vec<String>,
}

/// The peer arms one shape runs, and the FP8 peer's activation columns at each m.
#[derive(Default, Clone)]
pub(super) struct ShapePeers {
    pub(super) arms: Vec<Arm>,
    /// Per m of [`BATCHES`], the fewest columns `N >= m` cuBLASLt ran (`None`: none did).
    pub(super) fp8_columns: [Option<usize>; BATCHES.len()],
}

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
            .map(|p| p.arms.clone())
            .unwrap_or_default()
    }

    /// The activation columns a peer arm of `shape` runs with: m for cuBLAS bf16, the count its
    /// first upload found for cuBLASLt FP8 (`None` where that peer does not run).
    pub(super) fn peer_columns(&self, shape: Shape, arm: Arm) -> Option<usize> {
        peer_columns(&self.peers.borrow(), shape, arm)
    }

    /// Opens the libraries once and runs each peer at every m once on this set: what fails is
    /// skipped for the shape, with one line saying why. The FP8 peer at m is tried at N = m,
    /// m + 1, ... up to [`FP8_COLUMNS`] columns and keeps the first N the library runs.
    pub(super) fn probe_peers(&self, gpu: &Gpu, shape: Shape, set: &mut Set) -> Result<(), Error> {
        let key = (shape.in_f, shape.out_f);
        if self.peers.borrow().usable.contains_key(&key) || set.peer.is_none() {
            return Ok(());
        }
        let mut peers = self.peers.borrow_mut();
        if peers.blas.is_none() {
            match Blas::new(gpu)? {
                Ok(b) => peers.blas = Some(b),
                Err(why) => say_once(&mut peers, format!("peer cublas bf16: skipped ({why})")),
            }
        }
        if peers.lt.is_none() {
            match BlasLt::new(gpu)? {
                Ok(l) => peers.lt = Some(l),
                Err(why) => say_once(&mut peers, format!("peer cublaslt e4m3: skipped ({why})")),
            }
        }
        let mut found = ShapePeers::default();
        for m in BATCHES {
            if peers.blas.is_some() {
                try_peer(&mut peers, &mut found, gpu, shape, Arm::Bf16(m), m..=m, set);
            }
            if peers.lt.is_some() {
                let counts = m..=FP8_COLUMNS;
                try_peer(&mut peers, &mut found, gpu, shape, Arm::Fp8(m), counts, set);
            }
        }
        peers.usable.insert(key, found);
        Ok(())
    }
}

/// Runs `arm` on `set` at each column count of `counts` in turn until one runs, and records it
/// in `found`; if none does, says so in one line with the last refusal.
fn try_peer(
    peers: &mut Peers,
    found: &mut ShapePeers,
    gpu: &Gpu,
    shape: Shape,
    arm: Arm,
    counts: std::ops::RangeInclusive<usize>,
    set: &mut Set,
) {
    let mut last = None;
    for n in counts {
        match call_peer(peers, gpu, shape, arm, n, set).and_then(|_| gpu.synchronize()) {
            Ok(()) => {
                found.arms.push(arm);
                if let Arm::Fp8(m) = arm {
                    found.fp8_columns[batch_index(m)] = Some(n);
                }
                return;
            }
            Err(e) => last = Some(e),
        }
    }
    if let Some(e) = last {
        say_once(
            peers,
            format!("peer {}: skipped for {shape} ({e})", arm.label()),
        );
    }
}

/// [`Gemv::peer_columns`] on the peers' state.
fn peer_columns(peers: &Peers, shape: Shape, arm: Arm) -> Option<usize> {
    match arm {
        Arm::Bf16(m) => Some(m),
        Arm::Fp8(m) => peers.usable.get(&(shape.in_f, shape.out_f))?.fp8_columns[batch_index(m)],
        _ => None,
    }
}

/// Enqueues one peer call on `set`, at the columns its shape's probe found.
pub(super) fn run_peer(
    peers: &mut Peers,
    gpu: &Gpu,
    shape: Shape,
    arm: Arm,
    set: &mut Set,
) -> Result<(), Error> {
    let n = peer_columns(peers, shape, arm).expect("a peer arm that ran in the probe");
    call_peer(peers, gpu, shape, arm, n, set)
}

/// Enqueues one peer call on `set` over `n` activation columns: rows `0..m` of the activation,
/// then zero columns up to `n` (the FP8 peer's padding).
fn call_peer(
    peers: &mut Peers,
    gpu: &Gpu,
    shape: Shape,
    arm: Arm,
    n: usize,
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
    let (in_f, out_f) = (shape.in_f, shape.out_f);
    match arm {
        Arm::Bf16(_) => peers
            .blas
            .as_ref()
            .ok_or_else(|| missing("cuBLAS"))?
            .gemm_bf16(gpu, &p.w_bf16, &p.x_bf16, &mut p.y, in_f, out_f, n),
        Arm::Fp8(m) => {
            let (x, b_scale) = &p.fp8[batch_index(m)];
            peers
                .lt
                .as_mut()
                .ok_or_else(|| missing("cuBLASLt"))?
                .matmul_e4m3(
                    gpu,
                    &set.w.e4m3,
                    x,
                    &p.a_scale,
                    b_scale,
                    &p.c,
                    &mut p.y,
                    in_f,
                    out_f,
                    n,
                )
        }
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

/// The FP8 peer's activation at m: rows `0..m` of `x` in e4m3 under the scale that maps their
/// largest magnitude to 448 (1 for all-zero rows), zero-padded to [`FP8_COLUMNS`] rows.
pub(super) fn fp8_activation(x: &[Vec<f64>], m: usize, in_f: usize) -> Fp8Activation {
    let amax = x[..m].iter().flatten().fold(0.0f64, |a, v| a.max(v.abs()));
    let scale = if amax > 0.0 {
        (amax / 448.0) as f32
    } else {
        1.0
    };
    let mut codes = vec![0u8; FP8_COLUMNS * in_f];
    for (q, &v) in codes.iter_mut().zip(x[..m].iter().flatten()) {
        *q = encode_e4m3((v / f64::from(scale)) as f32);
    }
    Fp8Activation { x: codes, scale }
}

/// The peers' operands: the e4m3 weights in bf16 (exact), every activation row dequantized to
/// bf16, and each m's rows in e4m3 ([`fp8_activation`]).
pub(super) fn peer_inputs(inputs: &Inputs, shape: Shape) -> PeerInputs {
    let w_bf16 = inputs
        .e4m3
        .iter()
        .map(|&b| bf16::from_f64(launch::e4m3_f64(b) * f64::from(E4M3_SCALE)))
        .collect();
    let x = activation_rows(inputs, shape);
    let x_bf16 = x.iter().flatten().map(|&v| bf16::from_f64(v)).collect();
    PeerInputs {
        w_bf16,
        x_bf16,
        fp8: BATCHES.map(|m| fp8_activation(&x, m, shape.in_f)),
        refs: OnceCell::new(),
    }
}

/// The peers' device operands for one buffer set; outputs hold [`FP8_COLUMNS`] columns, the
/// most either peer writes.
pub(super) fn peer_bufs(gpu: &Gpu, shape: Shape, inputs: &Inputs) -> Result<PeerBufs, Error> {
    let p = inputs.peer.get_or_init(|| peer_inputs(inputs, shape));
    Ok(PeerBufs {
        w_bf16: gpu.upload(&p.w_bf16)?,
        x_bf16: gpu.upload(&p.x_bf16)?,
        fp8: p
            .fp8
            .iter()
            .map(|a| Ok((gpu.upload(&a.x)?, gpu.upload(&[a.scale])?)))
            .collect::<Result<_, Error>>()?,
        a_scale: gpu.upload(&[E4M3_SCALE])?,
        c: gpu.alloc_poisoned(FP8_COLUMNS * shape.out_f, 0)?,
        y: gpu.alloc_poisoned(FP8_COLUMNS * shape.out_f, POISON_F32)?,
    })
}

/// The f64 reference of both peers on their own operands at every m, rows as
/// [`peer_rows`]: the e4m3 weights (exactly the bf16 weights) against the bf16 activation rows,
/// then against each m's e4m3 rows times their scale.
pub(super) fn peer_reference(p: &PeerInputs, inputs: &Inputs, shape: Shape) -> Reference {
    let in_f = shape.in_f;
    let bf16_rows = p
        .x_bf16
        .chunks_exact(in_f)
        .map(|r| r.iter().map(|v| v.to_f64()).collect());
    let fp8_rows = BATCHES.iter().zip(&p.fp8).flat_map(|(&m, a)| {
        a.x.chunks_exact(in_f).take(m).map(|r| {
            r.iter()
                .map(|&b| launch::e4m3_f64(b) * f64::from(a.scale))
                .collect()
        })
    });
    let x: Vec<Vec<f64>> = bf16_rows.chain(fp8_rows).collect();
    debug_assert_eq!(x.len(), PEER_ROWS);
    let e4m3 = &inputs.e4m3;
    gemv_f64(&x, shape.out_f, |r| {
        launch::e4m3_row_f64(&e4m3[r * in_f..(r + 1) * in_f], E4M3_SCALE)
    })
}
