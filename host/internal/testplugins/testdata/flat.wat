;; flat: a length distribution written in WebAssembly text from sdk/ABI.md alone, without the
;; SDK or any toolchain but an assembler, as an author in another language would. Every prompt
;; of a cell gets the cell's mean L clamped to [min, max]; the output depends only on the call's
;; parameters, so it declares capability "pure".
;;
;; It is deliberately lax about its config (it never reads it, so unknown keys pass), which
;; `genload plugin check` must report at its config step.
;;
;; Memory map (one 64 KiB page to start; the allocator grows it):
;;   0x0100  info JSON (data segment)
;;   0x0200  error messages (data segments)
;;   0x0400  allocation table: 64 entries of (start u32, end u32); end = 0 marks a free entry
;;   0x1000  heap: host buffers, bump-allocated, 8-byte aligned
(module
  (memory (export "memory") 1)

  (data (i32.const 0x0100) "{\"name\":\"flat\",\"version\":\"0.1.0\",\"kind\":\"lengths\",\"abi_minor\":0,\"caps\":[\"pure\"]}")
  (data (i32.const 0x0200) "pointer outside the host's buffers")
  (data (i32.const 0x0240) "not initialised")
  (data (i32.const 0x0260) "n out of range")

  (global $heap (mut i32) (i32.const 0x1000))
  (global $ready (mut i32) (i32.const 0))
  (global $err (mut i64) (i64.const 0))

  ;; pack returns ptr << 32 | len.
  (func $pack (param $ptr i32) (param $len i32) (result i64)
    (i64.or (i64.shl (i64.extend_i32_u (local.get $ptr)) (i64.const 32))
            (i64.extend_i32_u (local.get $len))))

  ;; fail records the message [ptr, ptr+len) as the last error and returns -status.
  (func $fail (param $status i32) (param $ptr i32) (param $len i32) (result i32)
    (global.set $err (call $pack (local.get $ptr) (local.get $len)))
    (i32.sub (i32.const 0) (local.get $status)))

  ;; inbuf reports whether [ptr, ptr+len) lies inside one live allocation (ABI section 3.3).
  (func $inbuf (param $ptr i32) (param $len i32) (result i32)
    (local $e i32) (local $start i32) (local $end i32)
    (local.set $e (i32.const 0x0400))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $e) (i32.const 0x0600)))
        (local.set $start (i32.load (local.get $e)))
        (local.set $end (i32.load offset=4 (local.get $e)))
        (if (i32.and
              (i32.ne (local.get $end) (i32.const 0))
              (i32.and
                (i32.ge_u (local.get $ptr) (local.get $start))
                (i64.le_u (i64.add (i64.extend_i32_u (local.get $ptr)) (i64.extend_i32_u (local.get $len)))
                          (i64.extend_i32_u (local.get $end)))))
          (then (return (i32.const 1))))
        (local.set $e (i32.add (local.get $e) (i32.const 8)))
        (br $next)))
    (i32.const 0))

  (func (export "_initialize"))
  (func (export "genload_abi_v1"))

  ;; genload_alloc bumps the heap by size rounded up to 8 (at least 8), growing memory as needed,
  ;; and records the buffer in the first free table entry. It returns 0 when the table is full or
  ;; memory cannot grow.
  (func (export "genload_alloc") (param $size i32) (result i32)
    (local $p i32) (local $end i32) (local $e i32) (local $need i32)
    (local.set $p (global.get $heap))
    (local.set $end (i32.add (local.get $p)
      (i32.and (i32.add (select (local.get $size) (i32.const 8) (local.get $size)) (i32.const 7)) (i32.const -8))))
    (if (i32.lt_u (local.get $end) (local.get $p)) (then (return (i32.const 0))))
    (local.set $need (i32.sub (i32.shr_u (i32.add (local.get $end) (i32.const 0xffff)) (i32.const 16)) (memory.size)))
    (if (i32.gt_s (local.get $need) (i32.const 0))
      (then (if (i32.eq (memory.grow (local.get $need)) (i32.const -1)) (then (return (i32.const 0))))))
    (local.set $e (i32.const 0x0400))
    (block $full
      (loop $next
        (br_if $full (i32.ge_u (local.get $e) (i32.const 0x0600)))
        (if (i32.eqz (i32.load offset=4 (local.get $e)))
          (then
            (i32.store (local.get $e) (local.get $p))
            (i32.store offset=4 (local.get $e) (local.get $end))
            (global.set $heap (local.get $end))
            (return (local.get $p))))
        (local.set $e (i32.add (local.get $e) (i32.const 8)))
        (br $next)))
    (i32.const 0))

  ;; genload_free forgets the buffer starting at ptr (its bytes are not reused); unknown
  ;; pointers are ignored.
  (func (export "genload_free") (param $ptr i32)
    (local $e i32)
    (local.set $e (i32.const 0x0400))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $e) (i32.const 0x0600)))
        (if (i32.and (i32.eq (i32.load (local.get $e)) (local.get $ptr))
                     (i32.ne (i32.load offset=4 (local.get $e)) (i32.const 0)))
          (then (i32.store offset=4 (local.get $e) (i32.const 0)) (return)))
        (local.set $e (i32.add (local.get $e) (i32.const 8)))
        (br $next))))

  (func (export "genload_info") (result i64)
    (call $pack (i32.const 0x0100) (i32.const 80)))

  (func (export "genload_last_error") (result i64)
    (global.get $err))

  ;; genload_init checks that the envelope lies in a host buffer and never looks at the config.
  (func (export "genload_init") (param $ptr i32) (param $len i32) (result i32)
    (global.set $err (i64.const 0))
    (if (i32.eqz (call $inbuf (local.get $ptr) (local.get $len)))
      (then (return (call $fail (i32.const 1) (i32.const 0x0200) (i32.const 34)))))
    (global.set $ready (i32.const 1))
    (i32.const 0))

  ;; genload_lengths writes n copies of mean clamped to [min, max].
  (func (export "genload_lengths") (param $n i32) (param $mean i32) (param $min i32) (param $max i32)
        (param $seed i64) (param $out i32) (result i32)
    (local $v i32) (local $i i32)
    (global.set $err (i64.const 0))
    (if (i32.eqz (global.get $ready))
      (then (return (call $fail (i32.const 3) (i32.const 0x0240) (i32.const 15)))))
    (if (i32.gt_u (local.get $n) (i32.const 1048576))
      (then (return (call $fail (i32.const 1) (i32.const 0x0260) (i32.const 14)))))
    (if (i32.eqz (call $inbuf (local.get $out) (i32.shl (local.get $n) (i32.const 2))))
      (then (return (call $fail (i32.const 1) (i32.const 0x0200) (i32.const 34)))))
    (local.set $v (local.get $mean))
    (if (i32.lt_s (local.get $v) (local.get $min)) (then (local.set $v (local.get $min))))
    (if (i32.gt_s (local.get $v) (local.get $max)) (then (local.set $v (local.get $max))))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (i32.store (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 2))) (local.get $v))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (local.get $n))
)
