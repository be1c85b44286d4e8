//! `lockstep.matmul`: the wrapping integer matrix product and its model matrix.

use crate::run::{Device, check_alloc, single_pass, to_py};
use lockstep::matmul::{self, MatmulInt};
use numpy::ndarray::Array2;
use numpy::{Element, IntoPyArray, PyArray2, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

fn multiply_typed<'py, T: MatmulInt + Element>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, T>,
    b: PyReadonlyArray2<'py, T>,
    device: &str,
) -> PyResult<Bound<'py, PyArray2<T>>> {
    let n = a.shape()[0];
    check_alloc("the product (N² values)", n as u128 * n as u128, size_of::<T>() as u128)?;
    let device = Device::parse(py, device)?;
    let a = a.as_slice().map_err(|_| PyValueError::new_err("a: not C-contiguous"))?;
    let b = b.as_slice().map_err(|_| PyValueError::new_err("b: not C-contiguous"))?;
    // One call (not stopped mid-way: the product is one pass).
    let c = single_pass(py, device, |_| Ok(matmul::multiply(device.backend(), n, a, b)?))?;
    let arr = Array2::from_shape_vec((n, n), c).map_err(|e| PyValueError::new_err(format!("product shape: {e}")))?;
    Ok(arr.into_pyarray(py))
}

#[pyfunction]
fn matmul_multiply_i32<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, i32>,
    b: PyReadonlyArray2<'py, i32>,
    device: &str,
) -> PyResult<Bound<'py, PyArray2<i32>>> {
    multiply_typed(py, a, b, device)
}

#[pyfunction]
fn matmul_multiply_i64<'py>(
    py: Python<'py>,
    a: PyReadonlyArray2<'py, i64>,
    b: PyReadonlyArray2<'py, i64>,
    device: &str,
) -> PyResult<Bound<'py, PyArray2<i64>>> {
    multiply_typed(py, a, b, device)
}

fn model_typed<T: MatmulInt + Element>(py: Python<'_>, n: usize) -> PyResult<Bound<'_, PyArray2<T>>> {
    if n == 0 || n > matmul::MAX_N {
        return Err(to_py(lockstep::Error::TooLarge { what: "matrix size N", value: n as u64, max: matmul::MAX_N as u64 }));
    }
    check_alloc("the model matrix (N² values)", n as u128 * n as u128, size_of::<T>() as u128)?;
    let m = py.allow_threads(|| matmul::model_matrix::<T>(n));
    let arr = Array2::from_shape_vec((n, n), m).map_err(|e| PyValueError::new_err(format!("shape: {e}")))?;
    Ok(arr.into_pyarray(py))
}

#[pyfunction]
fn matmul_model<'py>(py: Python<'py>, n: usize, dtype: &str) -> PyResult<Bound<'py, PyAny>> {
    match dtype {
        "int32" => Ok(model_typed::<i32>(py, n)?.into_any()),
        "int64" => Ok(model_typed::<i64>(py, n)?.into_any()),
        d => Err(PyValueError::new_err(format!("dtype: {d:?} is not 'int32' or 'int64'"))),
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(matmul_multiply_i32, m)?)?;
    m.add_function(wrap_pyfunction!(matmul_multiply_i64, m)?)?;
    m.add_function(wrap_pyfunction!(matmul_model, m)?)?;
    Ok(())
}
