// Locations through lowering: every op a pass creates carries the location of the graph op it
// comes from; work that serves a consumer and a producer (a conversion, the copy of a returned
// value, a repeat's carry-in copy) carries loc(fused[consumer, producer]), down to the
// exchange rows and their instructions (ipu_dialects/locations.py, docs/internals.md).
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_r16_p16},insert-conversions' --print-debuginfo | filecheck %s --check-prefix=MID
// RUN: ipu-opt %s --split-input-file -p 'graph-to-mid{tiles=16 catalog=amp_gemm_f16_r16_p16},insert-conversions,normalize-repeats,mid-to-tile' --print-debuginfo | filecheck %s --check-prefix=TILE
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=16 catalog=amp_gemm_f16_r16_p16}' --print-debuginfo | filecheck %s --check-prefix=EXCH
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=16 catalog=amp_gemm_f16_r16_p16}' --print-debuginfo | filecheck %s --check-prefix=KNOWN
// The printed fused locations parse back unchanged:
// RUN: ipu-opt %s --split-input-file -p 'ipu-pipeline{tiles=16 catalog=amp_gemm_f16_r16_p16}' --print-debuginfo | ipu-opt --split-input-file --print-debuginfo | filecheck %s --check-prefix=EXCH

func.func @f(%x: tensor<64x128xf16>, %w: tensor<128x256xf16>, %v: tensor<256x128xf16>) -> (tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16>) {
  %y = graph.gemm %x, %w : (tensor<64x128xf16>, tensor<128x256xf16>) -> tensor<64x256xf16> loc("user.py":10:5)
  %g = graph.gelu %y : tensor<64x256xf16> -> tensor<64x256xf16> loc("user.py":11:5)
  %z = graph.gemm %g, %v : (tensor<64x256xf16>, tensor<256x128xf16>) -> tensor<64x128xf16> loc("user.py":12:5)
  func.return %z, %z, %x : tensor<64x128xf16>, tensor<64x128xf16>, tensor<64x128xf16> loc("user.py":13:5)
} loc("user.py":9:1)

// MID:      %y = mid.gemm %x, %w {{.*}} loc("user.py":10:5)
// MID-NEXT: %y_1 = mid.rearrange %y {ipu.for = "graph.gelu %g"} {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// MID-NEXT: %g = mid.gelu %y_1 {{.*}} loc("user.py":11:5)
// MID-NEXT: %g_1 = mid.rearrange %g {ipu.for = "graph.gemm %z"} {{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// MID-NEXT: %z = mid.gemm %g_1, %v {{.*}} loc("user.py":12:5)
// MID-NEXT: func.return %z, %z, %x {{.*}} loc("user.py":13:5)
// MID-NEXT: } loc("user.py":9:1)

// Buffers: an argument's at the function, a value's at its producer, a staging slot at the
// op that stages data in it, a returned value's copy at fused[func.return, producer].
// TILE:      func.func @f()
// TILE-NEXT: %x = tile.buffer @x input 0 {{.*}} loc("user.py":9:1)
// TILE-NEXT: %w = tile.buffer @w input 1 {{.*}} loc("user.py":9:1)
// TILE-NEXT: %v = tile.buffer @v input 2 {{.*}} loc("user.py":9:1)
// TILE-NEXT: %z = tile.buffer @z output 0 {{.*}} loc("user.py":12:5)
// TILE-NEXT: %result1 = tile.buffer @result1 output 1 {{.*}} loc(fused["user.py":13:5, "user.py":12:5])
// TILE-NEXT: %result2 = tile.buffer @result2 output 2 {{.*}} loc(fused["user.py":13:5, "user.py":9:1])
// TILE-NEXT: %y = tile.buffer @y scratch {{.*}} loc("user.py":10:5)
// TILE-NEXT: %y_rhs_slot = tile.buffer @y_rhs_slot scratch {{.*}} loc("user.py":10:5)
// TILE-NEXT: %y_1 = tile.buffer @y_1 scratch {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// TILE-NEXT: %y_1_gather_slot = tile.buffer @y_1_gather_slot scratch {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// The gelu writes over the conversion's @y_1 (it dies there): no buffer of its own.
// TILE-NEXT: %g = tile.buffer @g scratch {{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT: %g_gather_slot = tile.buffer @g_gather_slot scratch {{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT: %z_rhs_slot = tile.buffer @z_rhs_slot scratch {{.*}} loc("user.py":12:5)
// The first GEMM's block loops:
// TILE-NEXT: tile.loop %j = 0 to 4
// TILE-NEXT:   tile.exchange {{.*}} loc("user.py":10:5)
// TILE:        tile.loop %k = 1 to 2
// TILE:        } loc("user.py":10:5)
// TILE-NEXT: } loc("user.py":10:5)
// The gather loop of the conversion between the GEMM and the gelu, all of it fused:
// TILE-NEXT: tile.loop %r = 0 to 1 provenance #tile.provenance<op = "graph.gelu %g", value = "%y", reason = "rounds of input shards sent at once"> {
// TILE-NEXT:   tile.exchange 2048 words from %y{{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// TILE-NEXT:   tile.kernel @gather_round({{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// TILE-NEXT: } loc(fused["user.py":11:5, "user.py":10:5])
// TILE-NEXT: tile.kernel @gather_round({{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// TILE-NEXT: tile.kernel @gelu({{.*}} loc("user.py":11:5)
// TILE-NEXT: tile.loop %r_1 = 0 to 4 {{.*}} {
// TILE-NEXT:   tile.exchange 512 words from %y_1{{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT:   tile.kernel @gather_round({{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT: } loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT: tile.kernel @gather_round({{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// TILE-NEXT: tile.loop %j_1 = 0 to 2
// TILE-NEXT:   tile.exchange {{.*}} loc("user.py":12:5)
// TILE:        tile.loop %k_1 = 1 to 4
// TILE:        } loc("user.py":12:5)
// TILE-NEXT: } loc("user.py":12:5)
// TILE-NEXT: tile.kernel @convert_shard(%result1{{.*}}, %z{{.*}} loc(fused["user.py":13:5, "user.py":12:5])
// TILE-NEXT: tile.kernel @convert_shard(%result2{{.*}}, %x{{.*}} loc(fused["user.py":13:5, "user.py":9:1])
// TILE-NEXT: func.return loc("user.py":13:5)
// TILE-NEXT: } loc("user.py":9:1)

// Exchange rows and every instruction in them carry their tile.exchange's location.
// EXCH:      exchange.row @x0_send provenance "graph.gemm %y %w: rhs block to output-row tiles" {
// EXCH-NEXT:   exchange.send {{.*}} loc("user.py":10:5)
// EXCH:      } loc("user.py":10:5)
// EXCH:      exchange.row @x2_send provenance "graph.gelu %g %y: input shards of round r, each to the result tiles that hold its elements" {
// EXCH-NEXT:   exchange.send {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT:   exchange.sendoff {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT: } loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT: exchange.row @x2_receive provenance "graph.gelu %g %y: input shards of round r, each to the result tiles that hold its elements" {
// EXCH-NEXT:   exchange.sendpicp {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT:   exchange.delay {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT: } loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT: exchange.row @x2_duplex provenance "graph.gelu %g %y: input shards of round r, each to the result tiles that hold its elements" {
// EXCH-NEXT:   exchange.sendpicp {{.*}} loc(fused["user.py":11:5, "user.py":10:5])
// EXCH:      } loc(fused["user.py":11:5, "user.py":10:5])
// EXCH-NEXT: exchange.row @x3_send provenance "graph.gemm %z %g: input shards of round r, each to the result tiles that hold its elements" {
// EXCH-NEXT:   exchange.send {{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// EXCH:      exchange.row @x3_receive provenance "graph.gemm %z %g: input shards of round r, each to the result tiles that hold its elements" {
// EXCH-NEXT:   exchange.sendpicp {{.*}} loc(fused["user.py":12:5, "user.py":11:5])
// EXCH:      exchange.row @x4_send provenance "graph.gemm %z %v: rhs block to output-row tiles" {
// EXCH-NEXT:   exchange.send {{.*}} loc("user.py":12:5)

// Nothing but the (parsed, implicit) modules, at column 0, is left without a location.
// KNOWN-NOT: {{^\s+.*loc\(unknown\)}}

// -----

// A repeat: the loop at the repeat, its body's work at the body's own lines, the carry-in
// copy of the argument at fused[repeat, function], the copy of the exchanged sequence's
// current element at fused[GEMM, repeat], the conversion that brings the yielded GEMM result
// into the carried format (it writes the carried buffer) at fused[yield, GEMM].
func.func @r(%x0: tensor<64x64xf16>, %ws: tensor<2x64x64xf16>) -> tensor<64x64xf16> {
  %out = graph.repeat 2 carried(%x = %x0 : tensor<64x64xf16>) sequence(%w = %ws : tensor<2x64x64xf16>) {
    %y = graph.gemm %x, %w : (tensor<64x64xf16>, tensor<64x64xf16>) -> tensor<64x64xf16> loc("layers.py":21:7)
    graph.yield %y : tensor<64x64xf16> loc("layers.py":22:7)
  } -> tensor<64x64xf16> loc("layers.py":20:3)
  func.return %out : tensor<64x64xf16> loc("layers.py":23:3)
} loc("layers.py":19:1)

// MID:      %out = "mid.repeat"(%x0, %ws)
// MID:        %y = mid.gemm %x, %w {{.*}} loc("layers.py":21:7)
// MID-NEXT:   %y_1 = mid.rearrange %y {ipu.for = "graph.yield"} {{.*}} loc(fused["layers.py":22:7, "layers.py":21:7])
// MID-NEXT:   mid.yield %y_1 {{.*}} loc("layers.py":22:7)
// MID-NEXT: }) {{.*}} loc("layers.py":20:3)

// TILE:      %out = tile.buffer @out output 0 {{.*}} loc("layers.py":20:3)
// TILE:      tile.kernel @convert_shard(%out{{.*}}, %x0{{.*}} loc(fused["layers.py":20:3, "layers.py":19:1])
// TILE-NEXT: tile.loop %r = 0 to 2 {{.*}} {
// TILE-NEXT:   tile.kernel @convert_shard(%ws_element{{.*}}, %ws{{.*}} loc(fused["layers.py":21:7, "layers.py":20:3])
// TILE-NEXT:   tile.loop %j = 0 to 1 {{.*}} {
// TILE-NEXT:     tile.exchange {{.*}} loc("layers.py":21:7)
// TILE:        } loc("layers.py":21:7)
// TILE-NEXT:   tile.kernel @convert_shard(%out{{.*}}, %y{{.*}} loc(fused["layers.py":22:7, "layers.py":21:7])
// TILE-NEXT: } loc("layers.py":20:3)
// TILE-NEXT: func.return loc("layers.py":23:3)

// EXCH:      exchange.row @x0_send {{.*}} {
// EXCH-NEXT:   exchange.send {{.*}} loc("layers.py":21:7)
