/* A tiny aarch64 program for tests/unit/test-unwind.c: three frames with frame records
 * and CFI, linked without libc. Rebuild with build-arm64.sh beside it. */
	.text
	.globl f2, f2_body, f1, f1_ret, _start, start_ret
	.type f2, %function
f2:
	.cfi_startproc
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov x29, sp
	.cfi_def_cfa 29, 32
f2_body:
	nop
	ldp x29, x30, [sp], #32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa 31, 0
	ret
	.cfi_endproc
	.size f2, . - f2

	.type f1, %function
f1:
	.cfi_startproc
	stp x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov x29, sp
	bl f2
f1_ret:
	ldp x29, x30, [sp], #16
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size f1, . - f1

	.type _start, %function
_start:
	.cfi_startproc
	.cfi_undefined 30
	mov x29, #0
	bl f1
start_ret:
	b start_ret
	.cfi_endproc
	.size _start, . - _start
