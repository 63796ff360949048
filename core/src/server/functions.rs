//! Function libraries (FUNCTION LOAD, FCALL): logged state, unlike the EVAL cache. Each
//! library keeps its code (what snapshots carry and FUNCTION LIST WITHCODE shows) and the
//! functions it registered; the callbacks live in the functions' own Lua VM.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;

use crate::lua::Vm;

pub struct FunctionInfo {
    /// `crate::lua::FLAG_*` bits.
    pub flags: u32,
    pub description: Option<Box<[u8]>>,
}

pub struct Library {
    pub code: Box<[u8]>,
    pub functions: BTreeMap<Box<[u8]>, FunctionInfo>,
}

#[derive(Default)]
pub struct Functions {
    vm: Option<Vm>,
    /// By library name.
    pub libraries: BTreeMap<Box<[u8]>, Library>,
    /// Function name → its library.
    pub by_function: BTreeMap<Box<[u8]>, Box<[u8]>>,
}

impl Functions {
    /// The functions' VM, made on first use.
    pub fn vm(&mut self) -> Option<&mut Vm> {
        if self.vm.is_none() {
            self.vm = Vm::new_functions(crate::server::scripts::LUA_MEMORY_CAP);
        }
        self.vm.as_mut()
    }

    /// Lends the VM out for a call that also borrows the rest of the state.
    pub fn take_vm(&mut self) -> Option<Vm> {
        self.vm();
        self.vm.take()
    }

    pub fn put_vm(&mut self, vm: Vm) {
        self.vm = Some(vm);
    }

    /// The library of function `name` and the function's flags.
    pub fn find(&self, name: &[u8]) -> Option<(&[u8], u32)> {
        let lib = self.by_function.get(name)?;
        let flags = self.libraries.get(lib)?.functions.get(name)?.flags;
        Some((lib, flags))
    }

    /// Records a library whose functions the VM has committed (`remove` went first: it
    /// also drops the old library's callbacks from the VM).
    pub fn insert(&mut self, name: &[u8], lib: Library) {
        for f in lib.functions.keys() {
            self.by_function.insert(f.clone(), name.into());
        }
        self.libraries.insert(name.into(), lib);
    }

    pub fn remove(&mut self, name: &[u8]) -> bool {
        let Some(old) = self.libraries.remove(name) else { return false };
        for f in old.functions.keys() {
            self.by_function.remove(f);
        }
        if let Some(vm) = self.vm.as_mut() {
            vm.delete_library(name);
        }
        true
    }

    /// Bytes of the libraries' code and of the functions' VM (INFO memory).
    pub fn memory(&self) -> (usize, usize) {
        (self.libraries.values().map(|l| l.code.len() + 64).sum(), self.vm.as_ref().map_or(0, |v| v.used()))
    }

    /// FUNCTION FLUSH: no libraries, a fresh VM.
    pub fn flush(&mut self) {
        self.libraries.clear();
        self.by_function.clear();
        self.vm = None;
    }
}
