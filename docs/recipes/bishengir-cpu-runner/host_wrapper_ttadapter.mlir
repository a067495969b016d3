  func.func @host(%x: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<input>}, %y: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<input>}, %o: memref<1000xf32> {hacc.arg_type = #hacc.arg_type<output>}) attributes {hacc.function_kind = #hacc.function_kind<HOST>, hacc.host_func_type = #hacc.host_func_type<host_entry>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n32 = arith.constant 1000 : i32
    %g32 = arith.constant 4 : i32
    %one = arith.constant 1 : i32
    %zero = arith.constant 0 : i32
    %w = memref.alloc(%c0) : memref<?xi8>
    %xd = memref.cast %x : memref<1000xf32> to memref<?xf32>
    %yd = memref.cast %y : memref<1000xf32> to memref<?xf32>
    %od = memref.cast %o : memref<1000xf32> to memref<?xf32>
    scf.for %p = %c0 to %c4 step %c1 {
      %p32 = arith.index_cast %p : index to i32
      func.call @add_kernel(%w, %w, %xd, %yd, %od, %n32, %g32, %one, %one, %p32, %zero, %zero) : (memref<?xi8>, memref<?xi8>, memref<?xf32>, memref<?xf32>, memref<?xf32>, i32, i32, i32, i32, i32, i32, i32) -> ()
    }
    return
  }
}
