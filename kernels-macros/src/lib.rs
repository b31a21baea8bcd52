//! The `#[kernel]` attribute.
//!
//! One source item becomes two things, chosen by `cfg(target_arch = "nvptx64")`:
//!
//! - on the device, the exported PTX entry (`#[no_mangle] extern "ptx-kernel"`), so the symbol
//!   name in the module is the fn's identifier;
//! - on the host, a zero-sized marker type of the same name implementing
//!   `ferrocuda_abi::Kernel`, whose `NAME` is that identifier and whose `Params` tuple is
//!   derived from the signature (`*const T` -> `In<T>`, `*mut T` -> `Out<T>`, scalars as they
//!   are). The host's launcher is generic over `Kernel`, so a launch with the wrong argument
//!   types or count does not compile, and no kernel name is spelled twice by hand.
//!
//! The marker names the ABI crate by its absolute path, `::ferrocuda_abi`, so the attribute works
//! in any kernel crate that depends on `ferrocuda-abi` (which re-exports it as
//! `ferrocuda_abi::kernel`).

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{parse_macro_input, spanned::Spanned, FnArg, ItemFn, Type};

#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let msg = "#[kernel] takes no arguments";
        return syn::Error::new(proc_macro2::Span::call_site(), msg)
            .to_compile_error()
            .into();
    }
    let func = parse_macro_input!(item as ItemFn);
    match expand(func) {
        Ok(tokens) => tokens.into(),
        Err(err) => err.to_compile_error().into(),
    }
}

fn expand(func: ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &func.sig;
    if sig.unsafety.is_none() {
        return Err(syn::Error::new(
            sig.span(),
            "a #[kernel] must be `unsafe fn`: its callers promise the pointer extents",
        ));
    }
    if !matches!(sig.output, syn::ReturnType::Default) {
        return Err(syn::Error::new(
            sig.output.span(),
            "a #[kernel] returns nothing",
        ));
    }
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(
            sig.generics.span(),
            "a #[kernel] cannot be generic: PTX entries have one concrete signature",
        ));
    }
    let params = sig
        .inputs
        .iter()
        .map(host_param)
        .collect::<syn::Result<Vec<_>>>()?;

    let name = &sig.ident;
    let name_str = name.to_string();
    let arg_names = sig
        .inputs
        .iter()
        .map(|arg| match arg {
            FnArg::Typed(pat) => match &*pat.pat {
                syn::Pat::Ident(id) => Ok(id.ident.to_string()),
                other => Err(syn::Error::new(
                    other.span(),
                    "a #[kernel] parameter is a plain name",
                )),
            },
            FnArg::Receiver(r) => Err(syn::Error::new(r.span(), "a #[kernel] has no receiver")),
        })
        .collect::<syn::Result<Vec<_>>>()?;
    let vis = &func.vis;
    let attrs = &func.attrs;
    let inputs = &sig.inputs;
    let body = &func.block;
    let docs: Vec<_> = attrs.iter().filter(|a| a.path().is_ident("doc")).collect();
    let params_alias = format_ident!("__{}_params", name);

    Ok(quote! {
        #[cfg(target_arch = "nvptx64")]
        #(#attrs)*
        #[no_mangle]
        #vis unsafe extern "ptx-kernel" fn #name(#inputs) #body

        #[cfg(not(target_arch = "nvptx64"))]
        #(#docs)*
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy)]
        #vis struct #name;

        #[cfg(not(target_arch = "nvptx64"))]
        #[allow(non_camel_case_types)]
        type #params_alias = (#(#params,)*);

        #[cfg(not(target_arch = "nvptx64"))]
        impl ::ferrocuda_abi::Kernel for #name {
            const NAME: &'static str = #name_str;
            const ARGS: &'static [&'static str] = &[#(#arg_names),*];
            type Params = #params_alias;
        }
    })
}

/// Maps one device parameter to its host-side ABI type.
fn host_param(arg: &FnArg) -> syn::Result<proc_macro2::TokenStream> {
    let FnArg::Typed(pat) = arg else {
        return Err(syn::Error::new(arg.span(), "a #[kernel] has no receiver"));
    };
    host_type(&pat.ty)
}

/// Maps one device parameter type to its host-side ABI type. A type that reaches `#[kernel]`
/// through a `macro_rules!` `ty` fragment (as from `variants!`) arrives wrapped in an invisible
/// group, which is looked through.
fn host_type(ty: &Type) -> syn::Result<proc_macro2::TokenStream> {
    Ok(match ty {
        Type::Group(group) => return host_type(&group.elem),
        Type::Ptr(ptr) => {
            let elem = &ptr.elem;
            if ptr.mutability.is_some() {
                quote!(::ferrocuda_abi::Out<#elem>)
            } else {
                quote!(::ferrocuda_abi::In<#elem>)
            }
        }
        Type::Path(path) => quote!(#path),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "a #[kernel] parameter is a raw pointer or a scalar",
            ))
        }
    })
}
