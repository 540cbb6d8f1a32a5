// static_runtime.S -- the supervisor entry of every tile (a sketch; not assembled here).
//
// The executable model does not run this file: it executes the package's steps directly.
// It records what the runtime does on hardware so that the ABIs of the kernel table
// (device/kernels.py, device/kernel_abi.py) have one concrete caller:
//
//   1. clear the worker contexts' state and the exchange configuration registers,
//   2. sync with the host (the host has written the tile image: exchange rows in the code
//      region, and the input shards at the addresses of the package's HostTensor records),
//   3. branch to the supervisor code emitted by the compiler (`__ipu_supervisor_main`: in a
//      tile's image, the program that `-t ipu-asm` lists under that tile's `tile_N` label,
//      which is shared by every tile listed in its `# tiles` comment), which runs the steps: `sync` + the tile's exchange row for an ExchangeStep,
//      `run` of a kernel entry point with a vertex-state record for a KernelStep,
//   4. on return, sync with the host again and halt.
//
// Register use [M]: $m0 = vertex-state record of a worker call (pointers then scalars as
// 32-bit fields, in registry order); $m15 = zero register; $lr = link register.

    .section .text.static_runtime, "ax"
    .globl __ipu_static_runtime
    .type __ipu_static_runtime, @function
    .align 8
__ipu_static_runtime:
    // 1. quiesce: no incoming source selected, incoming pointer at the bottom of memory.
    setzi   $m1, 0
    put     $INCOMING_MUX, $m1
    put     $INCOMING_BASE, $m1
    put     $OUTGOING_BASE, $m1
    // 2. the host has loaded the image and the inputs: external sync before any step.
    sync    0x81                      // SYNC_EXTERNAL (host)
    // 3. the compiler's supervisor program: one basic block per package step.
    call    $lr, __ipu_supervisor_main
    // 4. results are in memory; tell the host and stop.
    sync    0x81
    setzi   $m1, 0
    exitz   $m1
    .size __ipu_static_runtime, .-__ipu_static_runtime

// How emitted supervisor code calls a worker kernel (one KernelStep on this tile):
//
//       setzi   $m2, vertex_state_record      // out, left, right, rows (for a GEMM)
//       setzi   $m1, amp_gemm_f16_init
//       run     $m1, $m2, 0                   // start the worker context
//       sync    0x1                           // wait for all workers of the tile
//
// and one ExchangeStep:
//
//       sync    0x2                           // internal (all tiles) sync: event 0
//       <the row words placed at the step's row_address: delay/send/.../sendpicp>
