//! Peer arms: the same operation through NVIDIA's libraries, timed in the same run as the
//! family's kernels. cuBLAS and cuBLASLt are loaded at run time (cudarc's dynamic loading); where
//! they are absent a gate skips its peer arms with one line instead of failing.
//!
//! Every call is enqueued on the gate's stream with a workspace of its own, so that it can be
//! captured into a graph like the family's launches.

use cudarc::cublas::sys as blas;
use cudarc::cublaslt::sys as lt;
use half::bf16;
use host::{CudaSlice, Error, Gpu};
use std::ffi::c_void;
use std::ptr;

pub mod attention;

/// Workspace each library gets (cuBLASLt's recommendation for Hopper).
const WORKSPACE: usize = 32 << 20;

fn peer_err(library: &'static str, during: &str, status: impl std::fmt::Debug) -> Error {
    Error::Peer {
        library,
        during: during.to_string(),
        status: format!("{status:?}"),
    }
}

fn check_blas(status: blas::cublasStatus_t, during: &str) -> Result<(), Error> {
    match status {
        blas::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        other => Err(peer_err("cuBLAS", during, other)),
    }
}

fn check_lt(status: lt::cublasStatus_t, during: &str) -> Result<(), Error> {
    match status {
        lt::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        other => Err(peer_err("cuBLASLt", during, other)),
    }
}

fn ptr_of<T>(gpu: &Gpu, buf: &CudaSlice<T>) -> *const c_void {
    use cudarc::driver::DevicePtr;
    buf.device_ptr(gpu.stream()).0 as *const c_void
}

fn mut_ptr_of<T>(gpu: &Gpu, buf: &mut CudaSlice<T>) -> *mut c_void {
    use cudarc::driver::DevicePtrMut;
    buf.device_ptr_mut(gpu.stream()).0 as *mut c_void
}

/// A cuBLAS handle bound to the gate's stream.
pub struct Blas {
    handle: blas::cublasHandle_t,
    _workspace: CudaSlice<u8>,
}

impl Blas {
    /// The handle, or why there is none (the library is not installed).
    pub fn new(gpu: &Gpu) -> Result<Result<Self, String>, Error> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { blas::is_culib_present() } {
            return Ok(Err("libcublas.so.13 could not be loaded".into()));
        }
        let mut handle = ptr::null_mut();
        // SAFETY: writes one handle.
        check_blas(
            unsafe { blas::cublasCreate_v2(&mut handle) },
            "creating a handle",
        )?;
        let mut workspace = gpu.alloc_poisoned::<u8>(WORKSPACE, 0)?;
        // SAFETY: the stream and the workspace outlive the handle (the workspace is owned here).
        unsafe {
            check_blas(
                blas::cublasSetStream_v2(handle, gpu.stream().cu_stream() as _),
                "setting the stream",
            )?;
            check_blas(
                blas::cublasSetWorkspace_v2(handle, mut_ptr_of(gpu, &mut workspace), WORKSPACE),
                "setting the workspace",
            )?;
        }
        Ok(Ok(Blas {
            handle,
            _workspace: workspace,
        }))
    }

    /// `y[j][out_f] = W[out_f][in_f] x[j][in_f]` for the `n` activation rows `j`, with bf16
    /// operands and f32 accumulation and output (cublasGemmEx, `n` columns): the bf16 GEMV
    /// (`n` = 1) or skinny GEMM a framework would run for this layer over a batch of `n` tokens.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_bf16(
        &self,
        gpu: &Gpu,
        w: &CudaSlice<bf16>,
        x: &CudaSlice<bf16>,
        y: &mut CudaSlice<f32>,
        in_f: usize,
        out_f: usize,
        n: usize,
    ) -> Result<(), Error> {
        assert!(n >= 1 && w.len() >= in_f * out_f && x.len() >= n * in_f && y.len() >= n * out_f);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major W is a column-major in_f x out_f matrix: y = W^T x.
        // SAFETY: extents asserted above; alpha and beta live across the call.
        check_blas(
            unsafe {
                blas::cublasGemmEx(
                    self.handle,
                    blas::cublasOperation_t::CUBLAS_OP_T,
                    blas::cublasOperation_t::CUBLAS_OP_N,
                    out_f as i32,
                    n as i32,
                    in_f as i32,
                    (&alpha as *const f32).cast(),
                    ptr_of(gpu, w),
                    blas::cudaDataType_t::CUDA_R_16BF,
                    in_f as i32,
                    ptr_of(gpu, x),
                    blas::cudaDataType_t::CUDA_R_16BF,
                    in_f as i32,
                    (&beta as *const f32).cast(),
                    mut_ptr_of(gpu, y),
                    blas::cudaDataType_t::CUDA_R_32F,
                    out_f as i32,
                    blas::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    blas::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            },
            "running the bf16 GEMM (cublasGemmEx)",
        )
    }

    /// Per head `h`: `out[t][h][r] = sum_k x[t][h][k] W[h][r][k]` for `t < nt` (one
    /// cublasSgemmStridedBatched over the heads), f32 throughout.
    #[allow(clippy::too_many_arguments)]
    pub fn heads_sgemm(
        &self,
        gpu: &Gpu,
        x: &CudaSlice<f32>,
        w: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
        nt: usize,
        nh: usize,
        k: usize,
        r: usize,
    ) -> Result<(), Error> {
        assert!(x.len() >= nt * nh * k && w.len() >= nh * r * k && out.len() >= nt * nh * r);
        // Head h: W[h] row-major r x k is column-major k x r (op T gives r x k); x's columns are
        // the tokens, nh*k apart; out's columns likewise nh*r apart.
        let w = Strided::of(gpu, w, k, r * k);
        let x = Strided::of(gpu, x, nh * k, k);
        let out = Strided::of_mut(gpu, out, nh * r, r);
        // SAFETY: the extents asserted above hold every batch's matrices at these strides.
        unsafe { self.sgemm_batched(true, (r, nt, k), 1.0, w, x, 0.0, out, nh) }
    }

    /// `C_i = alpha op(A_i) B_i + beta C_i` for the `batch` column-major matrices `i` of each
    /// operand (cublasSgemmStridedBatched, f32 throughout, no TF32): `(m, n, k)` are op(A)'s
    /// rows, C's columns and the inner extent; `op(A)` is `A^T` where `trans_a`.
    ///
    /// # Safety
    /// Each operand holds its `batch` matrices at its stride: A `k x m` (`trans_a`) or `m x k`,
    /// B `k x n`, C `m x n`, each of its leading dimension.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn sgemm_batched(
        &self,
        trans_a: bool,
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        a: Strided,
        b: Strided,
        beta: f32,
        c: Strided,
        batch: usize,
    ) -> Result<(), Error> {
        use blas::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
        // SAFETY: the caller's extents; alpha and beta live across the call.
        check_blas(
            unsafe {
                blas::cublasSgemmStridedBatched(
                    self.handle,
                    if trans_a { CUBLAS_OP_T } else { CUBLAS_OP_N },
                    CUBLAS_OP_N,
                    m as i32,
                    n as i32,
                    k as i32,
                    &alpha,
                    a.at,
                    a.ld as i32,
                    a.stride as i64,
                    b.at,
                    b.ld as i32,
                    b.stride as i64,
                    &beta,
                    c.at.cast_mut(),
                    c.ld as i32,
                    c.stride as i64,
                    batch as i32,
                )
            },
            "running a batched SGEMM (cublasSgemmStridedBatched)",
        )
    }
}

/// One operand of [`Blas::sgemm_batched`]: the first matrix's device address, its leading
/// dimension, and the elements from one matrix of the batch to the next.
#[derive(Debug, Clone, Copy)]
pub struct Strided {
    pub at: *const f32,
    pub ld: usize,
    pub stride: usize,
}

impl Strided {
    /// `buf`'s matrices, read.
    pub fn of(gpu: &Gpu, buf: &CudaSlice<f32>, ld: usize, stride: usize) -> Self {
        Strided {
            at: ptr_of(gpu, buf).cast(),
            ld,
            stride,
        }
    }

    /// `buf`'s matrices, written.
    pub fn of_mut(gpu: &Gpu, buf: &mut CudaSlice<f32>, ld: usize, stride: usize) -> Self {
        Strided {
            at: mut_ptr_of(gpu, buf).cast_const().cast(),
            ld,
            stride,
        }
    }

    /// The same matrices from `elements` into each.
    pub fn offset(self, elements: usize) -> Self {
        Strided {
            at: self.at.wrapping_add(elements),
            ..self
        }
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasCreate and is destroyed once.
        unsafe { blas::cublasDestroy_v2(self.handle) };
    }
}

/// The most activation columns a gate gives the FP8 matmul: a multiple of 16, which cuBLASLt's
/// FP8 GEMMs take on every shape the gates run. Which fewer columns a release takes is for the
/// caller to find out (the GEMV gate tries N = m upwards and pads the activation with zero
/// columns up to the first count the library runs).
pub const FP8_COLUMNS: usize = 16;

/// A cuBLASLt handle and workspace for FP8 (e4m3) matmuls.
pub struct BlasLt {
    handle: lt::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
}

impl BlasLt {
    /// The handle, or why there is none (the library is not installed).
    pub fn new(gpu: &Gpu) -> Result<Result<Self, String>, Error> {
        // SAFETY: only probes whether the library can be opened.
        if !unsafe { lt::is_culib_present() } {
            return Ok(Err("libcublasLt.so.13 could not be loaded".into()));
        }
        let mut handle = ptr::null_mut();
        // SAFETY: writes one handle.
        check_lt(
            unsafe { lt::cublasLtCreate(&mut handle) },
            "creating a handle",
        )?;
        Ok(Ok(BlasLt {
            handle,
            workspace: gpu.alloc_poisoned::<u8>(WORKSPACE, 0)?,
        }))
    }

    /// `d[n][out_f] = a_scale * b_scale * W[out_f][in_f] x[n][in_f]` with e4m3 operands, f32 `c`
    /// (not aliasing `d`) and f32 output: the FP8 GEMM a serving stack would run over `n`
    /// activation columns (the batch's rows, zero-padded to a count the library takes). The
    /// scales are device floats, each in an allocation of its own (cuBLASLt refuses them
    /// otherwise). A count cuBLASLt has no algorithm for is an `Err`, not a launch.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_e4m3(
        &mut self,
        gpu: &Gpu,
        w: &CudaSlice<u8>,
        x: &CudaSlice<u8>,
        a_scale: &CudaSlice<f32>,
        b_scale: &CudaSlice<f32>,
        c: &CudaSlice<f32>,
        d: &mut CudaSlice<f32>,
        in_f: usize,
        out_f: usize,
        n: usize,
    ) -> Result<(), Error> {
        assert!(n >= 1 && w.len() >= in_f * out_f && x.len() >= in_f * n);
        assert!(c.len() >= out_f * n && d.len() >= out_f * n);
        let during = "running the FP8 matmul (cublasLtMatmul)";
        let e4m3 = lt::cudaDataType_t::CUDA_R_8F_E4M3;
        let f32t = lt::cudaDataType_t::CUDA_R_32F;
        // SAFETY: descriptors are created, used and destroyed here; extents asserted above.
        unsafe {
            let mut desc = ptr::null_mut();
            check_lt(
                lt::cublasLtMatmulDescCreate(
                    &mut desc,
                    lt::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    f32t,
                ),
                during,
            )?;
            // cublasOperation_t's CUBLAS_OP_T, as the 32-bit value the attribute holds.
            let trans_a: i32 = 1;
            let set = |attr, value: *const c_void, size| {
                check_lt(
                    lt::cublasLtMatmulDescSetAttribute(desc, attr, value, size),
                    during,
                )
            };
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA,
                (&trans_a as *const i32).cast(),
                std::mem::size_of_val(&trans_a),
            )?;
            let (pa, pb) = (ptr_of(gpu, a_scale), ptr_of(gpu, b_scale));
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                (&pa as *const *const c_void).cast(),
                std::mem::size_of_val(&pa),
            )?;
            set(
                lt::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                (&pb as *const *const c_void).cast(),
                std::mem::size_of_val(&pb),
            )?;
            let layout = |ty, rows: usize, cols: usize, ld: usize| {
                let mut l = ptr::null_mut();
                check_lt(
                    lt::cublasLtMatrixLayoutCreate(&mut l, ty, rows as u64, cols as u64, ld as i64),
                    during,
                )
                .map(|_| l)
            };
            let a_l = layout(e4m3, in_f, out_f, in_f)?;
            let b_l = layout(e4m3, in_f, n, in_f)?;
            let c_l = layout(f32t, out_f, n, out_f)?;
            let mut pref = ptr::null_mut();
            check_lt(lt::cublasLtMatmulPreferenceCreate(&mut pref), during)?;
            let ws = WORKSPACE;
            check_lt(
                lt::cublasLtMatmulPreferenceSetAttribute(
                    pref,
                    lt::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&ws as *const usize).cast(),
                    std::mem::size_of_val(&ws),
                ),
                during,
            )?;
            let mut heuristic = std::mem::MaybeUninit::uninit();
            let mut found = 0;
            let status = lt::cublasLtMatmulAlgoGetHeuristic(
                self.handle,
                desc,
                a_l,
                b_l,
                c_l,
                c_l,
                pref,
                1,
                heuristic.as_mut_ptr(),
                &mut found,
            );
            let result = check_lt(status, during).and_then(|_| {
                if found == 0 {
                    return Err(peer_err("cuBLASLt", during, "no algorithm for this shape"));
                }
                let heuristic: lt::cublasLtMatmulHeuristicResult_t = heuristic.assume_init();
                let (alpha, beta) = (1.0f32, 0.0f32);
                check_lt(
                    lt::cublasLtMatmul(
                        self.handle,
                        desc,
                        (&alpha as *const f32).cast(),
                        ptr_of(gpu, w),
                        a_l,
                        ptr_of(gpu, x),
                        b_l,
                        (&beta as *const f32).cast(),
                        ptr_of(gpu, c),
                        c_l,
                        mut_ptr_of(gpu, d),
                        c_l,
                        &heuristic.algo,
                        mut_ptr_of(gpu, &mut self.workspace),
                        WORKSPACE,
                        gpu.stream().cu_stream() as _,
                    ),
                    during,
                )
            });
            lt::cublasLtMatmulPreferenceDestroy(pref);
            for l in [a_l, b_l, c_l] {
                lt::cublasLtMatrixLayoutDestroy(l);
            }
            lt::cublasLtMatmulDescDestroy(desc);
            result
        }
    }
}

impl Drop for BlasLt {
    fn drop(&mut self) {
        // SAFETY: the handle was created by cublasLtCreate and is destroyed once.
        unsafe { lt::cublasLtDestroy(self.handle) };
    }
}
