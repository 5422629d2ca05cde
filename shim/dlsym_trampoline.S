/* The exported dlsym: asks roundtrim_dlsym_decide(handle, name, return address) and either returns its answer or
 * tail-jumps to the real dlsym with the caller's return address untouched, so that RTLD_NEXT and
 * RTLD_DEFAULT keep resolving relative to the caller (see shim/dlsym_hook.c). If the real dlsym
 * cannot be resolved (only during a nested bootstrap lookup), it returns NULL. */

#if defined(__x86_64__)

    .text
    .globl  dlsym
    .type   dlsym, @function
    .hidden roundtrim_dlsym_decide
    .hidden roundtrim_dlsym_real
    .p2align 4
dlsym:
    .cfi_startproc
#if defined(__CET__)
    endbr64
#endif
    movq    (%rsp), %rdx /* the caller's return address: the third argument */
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp /* 16-byte alignment at the call */
    .cfi_adjust_cfa_offset 8
    call    roundtrim_dlsym_decide
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    jnz     1f
    movq    roundtrim_dlsym_real(%rip), %rax
    testq   %rax, %rax
    jz      1f
    jmp     *%rax
1:
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym

#elif defined(__aarch64__)

    .text
    .globl  dlsym
    .type   dlsym, %function
    .hidden roundtrim_dlsym_decide
    .hidden roundtrim_dlsym_real
    .p2align 4
dlsym:
    .cfi_startproc
#if defined(__ARM_FEATURE_BTI_DEFAULT)
    bti     c
#endif
    stp     x29, x30, [sp, #-32]!
    .cfi_def_cfa_offset 32
    .cfi_offset 29, -32
    .cfi_offset 30, -24
    mov     x29, sp
    stp     x0, x1, [sp, #16]
    mov     x2, x30 /* the caller's return address: the third argument */
    bl      roundtrim_dlsym_decide
    mov     x9, x0
    ldp     x0, x1, [sp, #16]
    ldp     x29, x30, [sp], #32
    .cfi_restore 29
    .cfi_restore 30
    .cfi_def_cfa_offset 0
    cbnz    x9, 1f
    adrp    x16, roundtrim_dlsym_real
    ldr     x16, [x16, #:lo12:roundtrim_dlsym_real]
    cbz     x16, 2f
    br      x16 /* x16: a valid BTI jump register for the real dlsym's "bti c" */
1:
    mov     x0, x9
    ret
2:
    mov     x0, xzr
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym

#endif

#if defined(__linux__) && defined(__ELF__)
    .section .note.GNU-stack, "", %progbits
#endif
