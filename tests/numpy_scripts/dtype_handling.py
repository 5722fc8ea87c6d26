"""dtype behaviour: integer wrap-around, float32 arithmetic, mixed promotion, casting and type limits."""
u8 = np.array([250, 5, 128], dtype=np.uint8)
wrapped = u8 + np.uint8(10)
widened = u8.astype(np.int16) + 10
f32 = np.linspace(0, 1, 5, dtype=np.float32)
mixed = f32 + np.arange(5)
mixed32 = f32 * 2
ints = np.array([1, 2, 3]) / 2
floor = np.array([7, -7]) // 2
mod = np.array([7, -7]) % 3
i32 = np.array([2 ** 30, 2 ** 30], dtype=np.int32)
summed = i32.sum()
result = {
    "wrapped": wrapped, "widened": widened, "mixed_dtype": str(mixed.dtype), "mixed32": str(mixed32.dtype),
    "ints": ints, "floor": floor, "mod": mod, "summed": summed, "sum_dtype": str(summed.dtype),
    "eps32": float(np.finfo(np.float32).eps), "max16": int(np.iinfo(np.int16).max),
    "astype_int": (np.array([1.7, -1.7, 2.5]).astype(int)), "bool_sum": np.array([True, True, False]).sum(),
    "casted": np.array([1, 2, 3], dtype=float).dtype == np.float64, "uint_mix": str((u8 + np.int8(1)).dtype),
    "issub": np.issubdtype(f32.dtype, np.floating), "complex": np.array([1 + 2j]) * 2,
    "result_type": str(np.result_type(np.int8, np.float32)), "f16": np.array([1.5, 2.25], dtype=np.float16) * 2,
}
